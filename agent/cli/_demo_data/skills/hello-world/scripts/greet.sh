#!/usr/bin/env bash
# Prints a greeting for the name given as the first argument (default: world).
set -euo pipefail
name="${1:-world}"
echo "Hello, ${name}! Greetings from the hello-world skill."
