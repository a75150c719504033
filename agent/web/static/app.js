// toolnexus agent: the page of `toolnexus-agent web`. Plain JavaScript, no build step.
//
// It talks to the JSON API of the same server with the launch token from the URL it was
// opened with (#token=...), follows each conversation's log as server-sent events read with
// fetch (so the token stays in a header), and renders the typed events of the runs.
"use strict";

(() => {
  // ------------------------------------------------------------------ helpers

  const $ = (selector, root = document) => root.querySelector(selector);

  function el(tag, props = {}, ...children) {
    const [name, ...classes] = tag.split(".");
    const node = document.createElement(name);
    if (classes.length) node.className = classes.join(" ");
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "className") node.className += " " + value;
      else if (key === "style") node.style.cssText = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // Small line icons drawn as SVG (no icon font, no emoji: both depend on the fonts installed).
  const ICONS = {
    clip: "M8 12.5l5.6-5.6a2.5 2.5 0 0 1 3.5 3.5l-7.1 7.1a4 4 0 0 1-5.7-5.7l6.4-6.4",
    pause: "M9 6v12M15 6v12",
    ask: "M9.2 9a3 3 0 1 1 4.3 2.7c-.9.4-1.5 1.2-1.5 2.2v.6M12 18h.01",
    plus: "M12 5v14M5 12h14",
    check: "M5 12.5l4.5 4.5L19 7.5",
    fork: "M7 4v6a4 4 0 0 0 4 4h2a4 4 0 0 1 4 4v2M7 4v16M17 4v4",
  };
  function icon(name) {
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("class", "icon");
    svg.setAttribute("aria-hidden", "true");
    const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", ICONS[name]);
    svg.append(path);
    return svg;
  }

  const json = (value) => JSON.stringify(value, null, 2);
  const brief = (value) => {
    const text = JSON.stringify(value ?? {});
    return text.length > 140 ? text.slice(0, 139) + "…" : text;
  };
  const plural = (n, word) => `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`;
  const dollars = (usd) => (usd === null || usd === undefined ? "unpriced" : usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`);
  function seconds(value) {
    if (value === null || value === undefined) return "…";
    if (value < 1) return `${Math.max(1, Math.round(value * 1000))} ms`;
    if (value < 60) return `${value.toFixed(value < 10 ? 2 : 1)} s`;
    return `${Math.floor(value / 60)} m ${Math.round(value % 60)} s`;
  }
  function ago(epoch) {
    if (!epoch) return "";
    const diff = Date.now() / 1000 - epoch;
    if (diff < 60) return "just now";
    if (diff < 3600) return `${Math.floor(diff / 60)} min ago`;
    if (diff < 86400) return `${Math.floor(diff / 3600)} h ago`;
    return new Date(epoch * 1000).toLocaleDateString();
  }

  // Text with ``` fences, `inline code` and **bold**, built as DOM nodes (never as HTML).
  function richText(node, raw) {
    node.replaceChildren();
    const pieces = raw.split(/```[\w-]*\n?/);
    pieces.forEach((piece, index) => {
      if (index % 2 === 1) {
        node.append(el("pre", {}, el("code", { text: piece.replace(/\n$/, "") })));
        return;
      }
      for (const bit of piece.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/)) {
        if (/^`[^`]+`$/.test(bit)) node.append(el("code", { text: bit.slice(1, -1) }));
        else if (/^\*\*[^*]+\*\*$/.test(bit)) node.append(el("strong", { text: bit.slice(2, -2) }));
        else if (bit) node.append(document.createTextNode(bit));
      }
    });
  }

  // ------------------------------------------------------------------ the API

  function readToken() {
    const found = location.hash.match(/token=([^&]+)/);
    if (found) {
      sessionStorage.setItem("toolnexus-token", decodeURIComponent(found[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem("toolnexus-token") || "";
  }
  const token = readToken();
  const auth = { Authorization: `Bearer ${token}` };

  async function api(path, { method = "GET", body } = {}) {
    const headers = { ...auth };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const error = new Error((data && data.error) || `HTTP ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  function banner(message) {
    const node = $("#banner");
    node.textContent = message || "";
    node.hidden = !message;
  }

  // ------------------------------------------------------------------ state

  const state = {
    info: null,
    runs: [],
    current: null,
    conversation: null,
    feed: null,
    lastSeq: 0,
    following: null,
    files: [],
    inspector: null,
    traceTimer: null,
  };

  // ------------------------------------------------------------------ rendering a run's events

  const KINDS = { run: "RUN", turn: "TURN", model_call: "LLM", tool_call: "TOOL" };

  // One feed renders a run's events into a container: the conversation, or the part of a
  // tool card where a sub-agent's events go (`nested`).
  class Feed {
    constructor(container, nested = false) {
      this.container = container;
      this.nested = nested;
      this.block = null;
      this.tools = new Map();
      this.last = null;
      this.subs = new Map();
      this.total = null;
    }

    body() {
      if (this.nested) return this.container;
      if (!this.block) {
        const model = (state.conversation && state.conversation.model) || (state.info && state.info.model) || "";
        const body = el("div.turn-body", {}, el("div.who", {}, "Agent", el("span.when", { text: model })));
        this.container.append(
          el("div.turn.agent", {}, el("div.avatar.agent", {}, el("img", { src: "/static/favicon.svg", alt: "" })), body),
        );
        this.block = body;
      }
      return this.block;
    }

    add(node) {
      this.body().append(node);
      this.last = node;
      return node;
    }

    user(note) {
      this.block = null;
      this.last = null;
      const body = el("div.turn-body");
      if (note.text) body.append(el("div.text.user-text", { text: note.text }));
      const files = note.files || [];
      if (files.length) {
        body.append(
          el(
            "div.thumbs",
            {},
            files.map((file) =>
              file.mime_type.startsWith("image/") && file.data
                ? el("img", { src: `data:${file.mime_type};base64,${file.data}`, alt: file.name })
                : el("span.file-chip", {}, icon("clip"), file.name),
            ),
          ),
        );
      }
      this.container.append(el("div.turn.user", {}, el("div.avatar.user", { text: "you" }), body));
    }

    note(text, tone = "") {
      this.last = null;
      return this.add(el(`div.note${tone ? "." + tone : ""}`, { text }));
    }

    text(text, turn, thought) {
      const same = this.last && this.last.dataset.turn === String(turn) && this.last.dataset.thought === String(!!thought);
      if (same) {
        this.last.dataset.raw += text;
        richText(this.last.querySelector(".text") || this.last, this.last.dataset.raw);
        return;
      }
      let node;
      if (thought) {
        const inner = el("div.text");
        node = el("details.thought", {}, el("summary", { text: "Thought" }), inner);
        richText(inner, text);
      } else {
        node = el("div.text.answer");
        richText(node, text);
      }
      node.dataset.raw = text;
      node.dataset.turn = String(turn);
      node.dataset.thought = String(!!thought);
      this.add(node);
    }

    key(call) {
      return call.id || `${call.turn}/${call.index}/${call.name}`;
    }

    toolCall(call) {
      const args = el("pre.args", { text: json(call.args) });
      const body = el("div.tool-body", {}, el("div.label", { text: "Arguments" }), args);
      const card = el(
        "details.tool.running",
        { dataset: { tool: call.name, key: this.key(call) } },
        el(
          "summary",
          {},
          el("span.tool-icon"),
          el("span.tool-name", { text: call.name }),
          el("span.tool-args", { text: brief(call.args) }),
          el("span.tool-preview"),
        ),
        body,
      );
      this.tools.set(this.key(call), card);
      this.add(card);
      this.last = null;
      return card;
    }

    card(call) {
      let card = this.tools.get(this.key(call));
      if (!card) {
        const waiting = [...this.tools.values()].filter((c) => c.dataset.tool === call.name && c.classList.contains("waiting"));
        card = waiting.pop();
      }
      return card || this.toolCall(call);
    }

    toolResult(call, result) {
      const card = this.card(call);
      const pending = result.metadata && result.metadata.pending;
      card.classList.remove("running", "waiting", "ok", "error");
      card.classList.add(pending ? "waiting" : result.is_error ? "error" : "ok");
      const body = card.querySelector(".tool-body");
      body.querySelectorAll(".result").forEach((node) => node.remove());
      const line = (result.output || "").split("\n").find((l) => l.trim()) || "";
      const preview = card.querySelector(".tool-preview");
      preview.textContent = pending ? "waiting for approval" : line.length > 70 ? line.slice(0, 69) + "…" : line;
      body.append(el("div.label.result", { text: pending ? "Waiting" : result.is_error ? "Error" : "Result" }));
      body.append(el("pre.output.result", { text: result.output }));
      for (const file of result.attachments || []) {
        if (file.mime_type && file.mime_type.startsWith("image/") && file.data) {
          body.append(el("img.result-image.result", { src: `data:${file.mime_type};base64,${file.data}`, alt: file.name || "image" }));
        }
      }
      if (this.subs.has(card)) card.open = false; // a sub-agent's work, folded once it is done
    }

    subFeed(name) {
      const running = [...this.tools.values()].filter((c) => c.dataset.tool === name);
      const card = running.filter((c) => c.classList.contains("running")).pop() || running.pop();
      if (!card) return this;
      let feed = this.subs.get(card);
      if (!feed) {
        const box = el("div.subagent", {}, el("div.who", { text: `Sub-agent ${name}` }));
        card.querySelector(".tool-body").append(box);
        card.open = true;
        feed = new Feed(box, true);
        this.subs.set(card, feed);
      }
      return feed;
    }

    event(event) {
      switch (event.type) {
        case "TextEvent":
          return this.text(event.text, event.turn, false);
        case "ThoughtEvent":
          return this.text(event.text, event.turn, true);
        case "ToolCallEvent":
          return this.toolCall(event.call);
        case "ToolResultEvent":
          return this.toolResult(event.call, event.result);
        case "PendingEvent":
          this.card(event.call).classList.add("waiting");
          if (!this.nested) this.add(askCard(event.request, event.call));
          return;
        case "RetryEvent":
          return this.note(
            `Model call failed (${[event.code, event.status].filter(Boolean).join(" ")}); retrying in ${event.delay.toFixed(1)} s`,
            "warn",
          );
        case "TierFallbackEvent":
          return this.note(`The ${event.tier} tier shed the request; sent again at ${event.fallback}`, "warn");
        case "Compacted":
          return this.note(`History compacted: ~${event.tokens_before.toLocaleString()} → ${event.tokens_after.toLocaleString()} tokens`);
        case "GroundingEvent":
          return this.note(`Searched: ${(event.grounding.queries || []).join(", ")}`);
        case "CodeExecutionEvent":
          return this.add(el("pre.text", { text: `${event.run.code}\n→ ${event.run.output}` }));
        case "UsageEvent":
          this.total = event.total;
          return;
        case "SubAgentEvent":
          return this.subFeed(event.agent).event(event.event);
        case "DoneEvent":
          return this.done(event.result);
        default:
          return;
      }
    }

    done(result) {
      if (this.nested) {
        this.note(`${result.status} · ${plural(result.turns, "turn")}`);
        return;
      }
      // An image model's picture is in the answer's Content, not in the text events.
      const lastModel = result.status === "completed" ? [...(result.contents || [])].reverse().find((c) => c.role === "model") : null;
      for (const part of (lastModel && lastModel.parts) || []) {
        if (part.inlineData && (part.inlineData.mimeType || "").startsWith("image/")) {
          this.add(el("img.result-image", { src: `data:${part.inlineData.mimeType};base64,${part.inlineData.data}`, alt: "image" }));
        }
      }
      if (result.output !== null && result.output !== undefined) {
        const answers = this.body().querySelectorAll(".answer");
        const last = answers[answers.length - 1];
        if (last && last.dataset.raw.trim().startsWith("{")) {
          const raw = el("details.thought", {}, el("summary", { text: "Raw answer" }), el("pre.text", { text: last.dataset.raw }));
          last.replaceWith(raw);
        }
        this.add(outputCard(result.output));
      }
      if (result.status === "pending") return; // the card asks; the run goes on after it
      const facts = [el("b", { text: result.status })];
      if (result.limit || result.reason) facts.push(el("span", { text: result.limit || result.reason }));
      facts.push(el("span", { text: plural(result.turns, "turn") }));
      facts.push(el("span", { text: `${result.usage.total.toLocaleString()} tokens` }));
      facts.push(el("span", { text: dollars(result.cost.usd) + (result.cost.estimated ? " (estimated)" : "") }));
      this.add(el("div.done", { dataset: { status: result.status } }, facts));
      this.last = null;
    }

    entry(kind, data) {
      if (kind === "agent") return this.event(data);
      switch (data.note) {
        case "prompt":
          return this.user(data);
        case "fork":
          this.block = null;
          this.container.append(el("div.note", { text: `Forked from ${data.from} at turn ${data.turn}: the first ${plural(data.turn, "turn")} are kept byte for byte` }));
          if (data.text || (data.files || []).length) this.user(data);
          return;
        case "decision":
          return decided(data.request, data.answer);
        case "stopped":
          return this.note("Stopped. The completed turns are kept.", "warn");
        case "error":
          return this.note(`${data.error}: ${data.message}`, "bad");
        default:
          return;
      }
    }
  }

  function outputCard(output) {
    const card = el("div.output-card", {}, el("h3", { text: "Typed output" }));
    if (output && typeof output === "object" && !Array.isArray(output)) {
      const list = el("dl.kv");
      for (const [key, value] of Object.entries(output)) {
        list.append(el("dt", { text: key }), el("dd", { text: typeof value === "string" ? value : JSON.stringify(value) }));
      }
      card.append(list);
    } else {
      card.append(el("pre", { text: json(output) }));
    }
    return card;
  }

  // ------------------------------------------------------------------ steering: approvals and questions

  function askCard(request, call) {
    const card = el("div.ask", { dataset: { request: request.id, kind: request.kind } });
    const error = el("p.form-error", { hidden: true });
    const fail = (message) => {
      error.textContent = message;
      error.hidden = false;
    };
    const send = async (body) => {
      error.hidden = true;
      card.querySelectorAll("button").forEach((b) => (b.disabled = true));
      try {
        await api(`/api/runs/${encodeURIComponent(state.current)}/decision`, { method: "POST", body: { request_id: request.id, ...body } });
        startFollowing(state.current, state.lastSeq);
      } catch (err) {
        fail(err.message);
        card.querySelectorAll("button").forEach((b) => (b.disabled = false));
      }
    };
    if (request.kind === "approval") {
      const data = request.data || {};
      const reason = el("input", { type: "text", placeholder: "Reason (the model reads it)", "aria-label": "Reason" });
      const editor = el("textarea", { hidden: true, "aria-label": "Edited arguments", spellcheck: "false" });
      editor.value = json(data.args || {});
      const shown = el("pre", { text: json(data.args || {}) });
      const approve = el("button.button.approve", { type: "button", dataset: { action: "approve" }, text: "Approve" });
      const edit = el("button.button", { type: "button", dataset: { action: "edit" }, text: "Edit arguments" });
      const deny = el("button.button.danger", { type: "button", dataset: { action: "deny" }, text: "Deny" });
      approve.addEventListener("click", () => {
        if (!editor.hidden) {
          let args;
          try {
            args = JSON.parse(editor.value);
          } catch (err) {
            fail(`Not JSON: ${err.message}`);
            return;
          }
          send({ action: "edit", args });
        } else send({ action: "approve" });
      });
      edit.addEventListener("click", () => {
        editor.hidden = !editor.hidden;
        shown.hidden = !editor.hidden;
        approve.textContent = editor.hidden ? "Approve" : "Approve with these arguments";
        edit.textContent = editor.hidden ? "Edit arguments" : "Cancel edit";
      });
      deny.addEventListener("click", () => send({ action: "deny", reason: reason.value }));
      card.append(
        el("div.ask-head", {}, icon("pause"), "Approval needed", el("span.badge", { text: data.tool || call.name })),
        el("div.ask-body", {}, el("div", { text: `The agent wants to run ${data.tool || call.name} with these arguments:` }), shown),
        editor,
        el("div.ask-actions", {}, approve, edit, deny, reason),
        error,
      );
      return card;
    }
    const questions = (request.data && request.data.questions) || [{ question: request.prompt }];
    const inputs = questions.map((q) => {
      const question = typeof q === "string" ? q : q.question;
      const options = (q && q.options) || [];
      const input = options.length
        ? el("select", {}, options.map((o) => el("option", { value: o, text: o })))
        : el("input", { type: "text", placeholder: "Your answer" });
      return { question, input };
    });
    const answer = el("button.button.primary", { type: "button", dataset: { action: "answer" }, text: "Answer" });
    const decline = el("button.button", { type: "button", dataset: { action: "decline" }, text: "Decline" });
    answer.addEventListener("click", () => {
      const answers = inputs.length === 1 ? inputs[0].input.value : Object.fromEntries(inputs.map((i) => [i.question, i.input.value]));
      send({ action: "answer", answers });
    });
    decline.addEventListener("click", () => send({ action: "decline" }));
    card.append(el("div.ask-head", {}, icon("ask"), "The agent asks"));
    for (const { question, input } of inputs) card.append(el("label", {}, el("div", { text: question }), input));
    card.append(el("div.ask-actions", {}, answer, decline), error);
    return card;
  }

  function decided(requestId, answer) {
    const card = document.querySelector(`.ask[data-request="${CSS.escape(requestId)}"]`);
    if (!card || card.classList.contains("decided")) return;
    const data = answer && answer.data;
    let said = "Answered";
    if (card.dataset.kind === "approval") {
      if (data && data.approved && data.args) said = "Approved with edited arguments";
      else if (data && data.approved) said = "Approved";
      else said = `Denied${data && data.reason ? ": " + data.reason : ""}`;
    } else if (answer && answer.ok === false) said = "Declined";
    card.classList.add("decided");
    const tool = card.querySelector(".badge");
    card.querySelector(".ask-head").replaceChildren(icon("check"), said, tool || "");
    card.querySelectorAll(".ask-actions, textarea, .form-error, .ask-body").forEach((node) => node.remove());
    const waiting = [...document.querySelectorAll(".tool.waiting")].pop();
    if (waiting && card.dataset.kind === "approval") {
      waiting.classList.remove("waiting");
      waiting.classList.add("running");
    }
  }

  // ------------------------------------------------------------------ rendering a stored transcript

  function renderContents(feed, contents, pending) {
    let calls = [];
    let turn = 0;
    for (const content of contents) {
      const parts = content.parts || [];
      if (content.role === "model") {
        turn += 1;
        calls = [];
        parts.forEach((part) => {
          if (part.thought && part.text) feed.text(part.text, turn, true);
          else if (typeof part.text === "string" && part.text) feed.text(part.text, turn, false);
          else if (part.functionCall) {
            const call = { ...part.functionCall, args: part.functionCall.args || {}, turn, index: calls.length };
            calls.push(call);
            feed.toolCall(call);
          } else if (part.inlineData) {
            feed.add(el("img.result-image", { src: `data:${part.inlineData.mimeType};base64,${part.inlineData.data}`, alt: "image" }));
          }
        });
        continue;
      }
      const responses = parts.filter((part) => part.functionResponse);
      if (responses.length) {
        responses.forEach((part, index) => {
          const response = part.functionResponse;
          const call = calls.find((c) => c.id && c.id === response.id) || calls[index] || { name: response.name, args: {}, turn, index };
          const body = response.response || {};
          const output = typeof body.output === "string" ? body.output : json(body);
          feed.toolResult(call, { output, is_error: !!body.isError, metadata: body.pending ? { pending: body.pending } : null });
        });
        continue;
      }
      const text = parts.filter((p) => typeof p.text === "string").map((p) => p.text).join("");
      const files = parts.filter((p) => p.inlineData).map((p) => ({ name: "file", mime_type: p.inlineData.mimeType, data: p.inlineData.data }));
      feed.user({ text, files });
    }
    if (pending) {
      feed.add(askCard(pending, { name: (pending.data && pending.data.tool) || "" }));
    }
  }

  // ------------------------------------------------------------------ following a conversation's log

  async function startFollowing(id, after) {
    if (state.following) state.following.abort();
    const control = new AbortController();
    state.following = control;
    setStatus("running");
    try {
      const response = await fetch(`/api/runs/${encodeURIComponent(id)}/events?after=${after}`, { headers: auth, signal: control.signal });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          handleFrame(id, frame);
        }
      }
    } catch (err) {
      if (err.name === "AbortError") return;
      banner(`Lost the event stream: ${err.message}`);
    }
    if (state.following === control) state.following = null;
    if (state.current === id) await refreshHeader(id);
    await loadRuns();
  }

  function handleFrame(id, frame) {
    let kind = "message";
    let data = "";
    let seq = null;
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) kind = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
      else if (line.startsWith("id: ")) seq = Number(line.slice(4));
    }
    if (!data || state.current !== id || !state.feed) return;
    if (seq !== null) state.lastSeq = seq;
    const entry = JSON.parse(data);
    state.feed.entry(kind, entry);
    if (kind === "note" && entry.note === "idle") setStatus(entry.status);
    scrollDown();
    scheduleTraceRefresh();
  }

  function scrollDown() {
    const box = $("#messages");
    if (box.scrollHeight - box.scrollTop - box.clientHeight < 240) box.scrollTop = box.scrollHeight;
  }

  // ------------------------------------------------------------------ runs list and header

  async function loadRuns() {
    try {
      state.runs = (await api("/api/runs")).runs;
    } catch (err) {
      banner(err.status === 401 ? "This page needs the URL that `toolnexus-agent web` printed (it carries the launch token)." : err.message);
      return;
    }
    const list = $("#run-list");
    list.replaceChildren(
      ...state.runs.map((run) =>
        el(
          "li",
          { className: run.id === state.current ? "selected" : "", dataset: { id: run.id, status: run.status }, onclick: () => openRun(run.id) },
          el(`span.status-dot.${run.status}`),
          el("span.title", { text: run.title || run.id }),
          el("span.sub", { text: [run.forked_from ? `fork of turn ${run.forked_from[1]}` : null, run.status, ago(run.created)].filter(Boolean).join(" · ") }),
        ),
      ),
    );
    if (!state.runs.length) list.append(el("li.muted", { text: "No conversations yet." }));
  }

  function setStatus(status) {
    const pill = $("#conv-status");
    pill.className = `status-pill ${status}`;
    pill.textContent = status;
    const running = status === "running";
    $("#stop").hidden = !running;
    $("#replay").disabled = running;
    $("#fork").disabled = running;
    $("#send").disabled = running;
    if (state.conversation) state.conversation.status = status;
  }

  async function refreshHeader(id) {
    const conversation = await api(`/api/runs/${encodeURIComponent(id)}`);
    state.conversation = conversation;
    $("#conv-header").hidden = false;
    $("#conv-title").textContent = conversation.title || conversation.id;
    $("#conv-sub").textContent = [conversation.model, conversation.id].filter(Boolean).join(" · ");
    setStatus(conversation.status);
    return conversation;
  }

  async function openRun(id) {
    if (state.following) state.following.abort();
    state.current = id;
    state.lastSeq = 0;
    banner("");
    $("#welcome") && $("#welcome").remove();
    const messages = $("#messages");
    messages.replaceChildren();
    state.feed = new Feed(messages);
    const conversation = await refreshHeader(id);
    $("#prompt").value = "";
    $("#prompt").placeholder = "Say more…";
    document.querySelectorAll("#run-list li").forEach((li) => li.classList.toggle("selected", li.dataset.id === id));
    if (conversation.entries > 0) {
      // What the transcript held before this page ran it (a fork's kept turns), then the log.
      renderContents(state.feed, conversation.contents.slice(0, conversation.history), null);
      startFollowing(id, 0);
    } else {
      renderContents(state.feed, conversation.contents, conversation.pending);
      if (!conversation.contents.length) state.feed.note("Nothing saved in this conversation yet.");
    }
    if (state.inspector === "trace") showTrace();
    else closeInspector();
  }

  function newRun() {
    if (state.following) state.following.abort();
    state.current = null;
    state.conversation = null;
    state.feed = null;
    $("#conv-header").hidden = true;
    const messages = $("#messages");
    messages.replaceChildren(
      el(
        "div.empty",
        { id: "welcome" },
        el("div.empty-mark", {}, el("img", { src: "/static/favicon.svg", alt: "" })),
        el("h2", { text: "Watch, steer, replay and fork your agent's runs" }),
        el("p", { text: "Start a run from a prompt. Tool calls appear as they happen, risky calls wait for your approval, and every run has a trace down to each model call." }),
      ),
    );
    const prompt = $("#prompt");
    prompt.value = (state.info && state.info.prompt) || "";
    prompt.placeholder = "Ask the agent…";
    $("#send").disabled = false;
    document.querySelectorAll("#run-list li").forEach((li) => li.classList.remove("selected"));
    closeInspector();
    prompt.focus();
  }

  // ------------------------------------------------------------------ composer

  async function submit(event) {
    event.preventDefault();
    const text = $("#prompt").value;
    if (!text.trim() && !state.files.length) return;
    const body = { text, files: state.files };
    $("#send").disabled = true;
    try {
      if (state.current) {
        await api(`/api/runs/${encodeURIComponent(state.current)}/messages`, { method: "POST", body });
        $("#prompt").value = "";
        clearFiles();
        startFollowing(state.current, state.lastSeq);
      } else {
        const created = await api("/api/runs", { method: "POST", body });
        clearFiles();
        await openRun(created.id);
        await loadRuns();
      }
    } catch (err) {
      banner(err.message);
      $("#send").disabled = false;
    }
  }

  function clearFiles() {
    state.files = [];
    $("#attachments").replaceChildren();
  }

  function addFiles(list) {
    for (const file of list) {
      const reader = new FileReader();
      reader.onload = () => {
        const data = String(reader.result).split(",", 2)[1] || "";
        const item = { name: file.name, mime_type: file.type || "application/octet-stream", data };
        state.files.push(item);
        const chip = el("span.file-chip", {}, icon("clip"), file.name, " ");
        chip.append(
          el("button.icon-button", {
            type: "button",
            text: "×",
            "aria-label": `Remove ${file.name}`,
            onclick: () => {
              state.files = state.files.filter((f) => f !== item);
              chip.remove();
            },
          }),
        );
        $("#attachments").append(chip);
      };
      reader.readAsDataURL(file);
    }
  }

  // ------------------------------------------------------------------ inspector: trace and replay

  function openInspector(title) {
    $("#inspector").hidden = false;
    $("#inspector-title").textContent = title;
    return $("#inspector-body");
  }

  function closeInspector() {
    $("#inspector").hidden = true;
    state.inspector = null;
  }

  function scheduleTraceRefresh() {
    if (state.inspector !== "trace" || state.traceTimer) return;
    state.traceTimer = setTimeout(() => {
      state.traceTimer = null;
      showTrace(true);
    }, 500);
  }

  async function showTrace(quiet = false) {
    if (!state.current) return;
    state.inspector = "trace";
    const body = openInspector("Trace");
    const data = await api(`/api/runs/${encodeURIComponent(state.current)}/trace`);
    const open = new Set([...body.querySelectorAll(".trace-detail")].map((d) => d.dataset.node));
    body.replaceChildren(
      el(
        "div.trace-legend",
        {},
        ["run", "turn", "model_call", "tool_call"].map((kind) =>
          el("span", {}, el(`span.legend-swatch.k-${kind}`), { run: "run", turn: "turn", model_call: "model call", tool_call: "tool call" }[kind]),
        ),
      ),
    );
    if (!data.runs.length) {
      body.append(el("p.muted", { text: "No runs of this conversation were recorded by this page yet: the trace covers the runs made while it is open." }));
      return;
    }
    for (const run of data.runs) {
      const box = el("div.trace-run");
      const end = run.duration ?? Date.now() / 1000 - run.started;
      traceRows(box, run, 0, { start: run.started, span: Math.max(end, 0.001) }, open);
      body.append(box);
    }
    if (!quiet) body.scrollTop = 0;
  }

  function traceRows(box, node, depth, scale, open) {
    const failed = node.attributes.status === "error" || node.attributes.status === "failed";
    const duration = node.duration ?? Date.now() / 1000 - node.started;
    const left = ((node.started - scale.start) / scale.span) * 100;
    const width = (duration / scale.span) * 100;
    const label = node.kind === "model_call" && node.attributes.attempt > 1 ? `${node.name} · attempt ${node.attributes.attempt}` : node.name;
    const row = el(
      "div.trace-row",
      { dataset: { kind: node.kind, name: node.name, node: node.id }, className: node.kind === "model_call" ? "clickable" : "" },
      el(
        "div.trace-name",
        { style: `padding-left:${depth * 14}px` },
        el(`span.kind.k-${failed ? "error" : node.kind}`, { text: KINDS[node.kind] }),
        el(
          "div.trace-label",
          {},
          el("span.label", { text: label, title: node.name }),
          el("span.trace-facts", {}, facts(node)),
        ),
      ),
      el("div.bar-track", {}, el(`div.bar.k-${failed ? "failed" : node.kind}`, { style: `left:${Math.max(0, left).toFixed(2)}%;width:${Math.max(0.4, width).toFixed(2)}%` })),
      el("div.trace-ms", { text: seconds(node.duration) }),
    );
    box.append(row);
    if (node.kind === "model_call") {
      row.addEventListener("click", () => toggleExchange(row, node));
      if (open.has(node.id)) toggleExchange(row, node);
    }
    for (const child of node.children) traceRows(box, child, depth + 1, scale, open);
  }

  function facts(node) {
    const a = node.attributes;
    const out = [];
    const tokens = node.usage && node.usage.total;
    if (tokens) out.push(el("span", { text: `${tokens.toLocaleString()} tok` }));
    if (node.cost_usd) out.push(el("span", { text: dollars(node.cost_usd) }));
    if (node.kind === "model_call") {
      if (a.error) out.push(el("span.bad", { text: `${a.error.code ?? ""} ${a.error.status ?? a.error.type ?? ""}`.trim() }));
      if (a.waited) out.push(el("span", { text: `waited ${seconds(a.waited)}` }));
      if (a.finish_reason) out.push(el("span", { text: a.finish_reason }));
      if (a.calls && a.calls.length) out.push(el("span", { text: `→ ${a.calls.join(", ")}` }));
    }
    if (node.kind === "tool_call") {
      if (a.status === "error") out.push(el("span.bad", { text: "error" }));
      if (a.status === "pending") out.push(el("span", { text: "waited for approval" }));
      if (a.approval) out.push(el("span.bad", { text: a.approval }));
      out.push(el("span.mono", { text: brief(a.args) }));
    }
    if (node.kind === "run" && a.status) out.push(el("span", { text: a.status }));
    return out;
  }

  async function toggleExchange(row, node) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("trace-detail")) {
      next.remove();
      row.classList.remove("selected");
      return;
    }
    row.classList.add("selected");
    const pre = el("pre", { text: "Loading…" });
    const tabs = el("div.detail-tabs");
    const detail = el("div.trace-detail", { dataset: { node: node.id } }, tabs, pre);
    row.after(detail);
    let exchange;
    try {
      exchange = await api(`/api/runs/${encodeURIComponent(state.current)}/trace/${node.id}`);
    } catch (err) {
      pre.textContent = err.message;
      return;
    }
    const show = (which) => {
      tabs.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b.dataset.which === which));
      pre.textContent = exchange[which] === null ? "No response: this attempt failed." : json(exchange[which]);
    };
    for (const which of ["request", "response"]) {
      tabs.append(el("button", { type: "button", dataset: { which }, text: which === "request" ? "Request" : "Response", onclick: (e) => { e.stopPropagation(); show(which); } }));
    }
    show("response");
  }

  async function showReplay() {
    if (!state.current) return;
    state.inspector = "replay";
    const body = openInspector("Replay");
    body.replaceChildren(el("p.muted", { text: "Replaying the stored conversation through the fake Gemini…" }));
    let report;
    try {
      report = await api(`/api/runs/${encodeURIComponent(state.current)}/replay`, { method: "POST", body: {} });
    } catch (err) {
      body.replaceChildren(el("p.form-error", { text: err.message }));
      return;
    }
    const ok = report.identical;
    body.replaceChildren(
      el(
        `div.replay-summary.${ok ? "ok" : "bad"}`,
        { dataset: { identical: String(ok) } },
        el("span.big", { text: ok ? "✓" : "✕" }),
        el(
          "div",
          {},
          el("b", { text: ok ? "Identical trajectory" : "The trajectory differs" }),
          el("div", { text: `${plural(report.turns.length, "turn")} and ${plural(report.requests, "model call")} replayed from the recorded replies; tools answered from the recorded results. ${report.difference || ""}` }),
        ),
      ),
      el(
        "ul.replay-turns",
        {},
        report.turns.map((turn) =>
          el(
            "li",
            {},
            el("b", { text: `turn ${turn.turn}` }),
            el("span", { text: turn.calls.length ? turn.calls.join(", ") : turn.text.slice(0, 90) || "(no text)" }),
            el(`span.${turn.identical ? "ok" : "bad"}`, { text: turn.identical ? "✓" : "✕" }),
          ),
        ),
      ),
    );
  }

  // ------------------------------------------------------------------ fork

  async function openFork() {
    if (!state.current) return;
    const conversation = await api(`/api/runs/${encodeURIComponent(state.current)}`);
    const turns = conversation.contents.filter((c) => c.role === "model");
    if (!turns.length) {
      banner("This conversation has no turns to fork yet.");
      return;
    }
    const select = $("#fork-turn");
    select.replaceChildren(
      ...turns.map((content, i) => {
        const parts = content.parts || [];
        const calls = parts.filter((p) => p.functionCall).map((p) => p.functionCall.name);
        const text = parts.filter((p) => p.text && !p.thought).map((p) => p.text).join(" ");
        const what = calls.length ? calls.join(", ") : text.slice(0, 60);
        return el("option", { value: String(i + 1), text: `Turn ${i + 1}: ${what}` });
      }),
    );
    select.value = "1";
    const models = $("#fork-model");
    const current = conversation.model || state.info.model;
    models.replaceChildren(...[...new Set([current, ...state.info.models])].map((m) => el("option", { value: m, text: m })));
    models.value = current;
    $("#fork-prompt").value = "";
    $("#fork-temperature").value = "";
    $("#fork-error").hidden = true;
    $("#fork-dialog").showModal();
  }

  async function submitFork(event) {
    event.preventDefault();
    const temperature = $("#fork-temperature").value;
    const body = {
      turn: Number($("#fork-turn").value),
      text: $("#fork-prompt").value,
      model: $("#fork-model").value,
      temperature: temperature === "" ? null : Number(temperature),
    };
    try {
      const fork = await api(`/api/runs/${encodeURIComponent(state.current)}/fork`, { method: "POST", body });
      $("#fork-dialog").close();
      await openRun(fork.id);
      await loadRuns();
    } catch (err) {
      const error = $("#fork-error");
      error.textContent = err.message;
      error.hidden = false;
    }
  }

  // ------------------------------------------------------------------ evals

  async function openReport(file) {
    let data;
    try {
      data = JSON.parse(await file.text());
    } catch (err) {
      renderEvalError(`${file.name} is not JSON: ${err.message}`);
      return;
    }
    try {
      renderEval(await api("/api/evals/report", { method: "POST", body: data }));
    } catch (err) {
      renderEvalError(err.message);
    }
  }

  async function runEval(event) {
    event.preventDefault();
    const path = $("#eval-path").value.trim();
    if (!path) return;
    $("#eval-report").replaceChildren(el("p.muted", { text: `Running ${path} offline…` }));
    try {
      renderEval(await api("/api/evals/run", { method: "POST", body: { path } }));
    } catch (err) {
      renderEvalError(err.message);
    }
  }

  function renderEvalError(message) {
    $("#eval-report").replaceChildren(el("p.form-error", { text: message }));
  }

  function renderEval(view) {
    const rate = Math.round(view.pass_rate * 100);
    const table = el("table.cases", {}, el("thead", {}, el("tr", {}, ["Case", "Pass rate", "Samples", "Tools F1", ""].map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const item of view.cases) {
      const pct = Math.round(item.pass_rate * 100);
      const row = el(
        "tr.case",
        { dataset: { case: item.id } },
        el("td", {}, el("b", { text: item.id })),
        el("td", {}, el("div.rate-bar", {}, el("div.track", {}, el("div.fill", { style: `width:${pct}%` })), `${pct}%`)),
        el("td", { text: `${item.passed}/${item.samples}` }),
        el("td", { text: item.score ? item.score.f1.toFixed(2) : "—" }),
        el("td.muted", { text: item.failures.length ? `${plural(item.failures.length, "failing sample")} ▸` : "" }),
      );
      body.append(row);
      if (!item.failures.length) continue;
      const detail = el("tr.detail", { hidden: true }, el("td", { colspan: "5" }, item.failures.map(failureView)));
      row.addEventListener("click", () => (detail.hidden = !detail.hidden));
      body.append(detail);
    }
    table.append(body);
    $("#eval-report").replaceChildren(
      el(
        "div.eval-head",
        {},
        el(`span.rate.${view.passed ? "ok" : "bad"}`, { text: `${rate}%` }),
        el("span", { text: `${view.passed_samples}/${view.samples} samples passed (needed ${Math.round(view.min_pass * 100)}%)` }),
        el("span.muted.mono", { text: view.file }),
      ),
      table,
    );
  }

  function failureView(failure) {
    const box = el("div.failure", { dataset: { sample: String(failure.sample) } }, el("h4", { text: `Sample ${failure.sample}` }));
    const reasons = failure.failed.map((c) => el("li", { text: `${c.name}: ${c.detail}` }));
    if (failure.error && !reasons.length) reasons.push(el("li", { text: failure.error }));
    box.append(el("ul", {}, reasons));
    if (failure.trajectory) {
      const rows = failure.trajectory.map((r) =>
        el(
          `tr.${r.same ? "same" : "diff"}`,
          {},
          el("td.mark", { text: r.same ? "=" : "≠" }),
          el("td.expected", { text: r.expected || "—" }),
          el("td.made", { text: r.made || "—" }),
        ),
      );
      box.append(
        el(
          "table.trajectory",
          {},
          el("thead", {}, el("tr", {}, el("th"), el("th", { text: `Expected (${failure.mode})` }), el("th", { text: "Made" }))),
          el("tbody", {}, rows),
        ),
      );
    }
    return box;
  }

  // ------------------------------------------------------------------ start

  function showView(view) {
    document.querySelectorAll(".tab").forEach((tab) => tab.classList.toggle("active", tab.dataset.view === view));
    $("#view-runs").hidden = view !== "runs";
    $("#view-evals").hidden = view !== "evals";
  }

  async function start() {
    $("#new-run").addEventListener("click", newRun);
    $("#composer").addEventListener("submit", submit);
    $("#prompt").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.metaKey || event.ctrlKey)) submit(event);
    });
    $("#files").addEventListener("change", (event) => {
      addFiles(event.target.files);
      event.target.value = "";
    });
    $("#show-trace").addEventListener("click", () => (state.inspector === "trace" ? closeInspector() : showTrace()));
    $("#replay").addEventListener("click", showReplay);
    $("#fork").addEventListener("click", openFork);
    $("#stop").addEventListener("click", async () => {
      try {
        await api(`/api/runs/${encodeURIComponent(state.current)}/stop`, { method: "POST", body: {} });
      } catch (err) {
        banner(err.message);
      }
    });
    $("#close-inspector").addEventListener("click", closeInspector);
    $("#fork-form").addEventListener("submit", submitFork);
    $("#fork-cancel").addEventListener("click", () => $("#fork-dialog").close());
    document.querySelectorAll(".tab").forEach((tab) => tab.addEventListener("click", () => showView(tab.dataset.view)));
    $("#eval-file").addEventListener("change", (event) => event.target.files[0] && openReport(event.target.files[0]));
    $("#eval-run").addEventListener("submit", runEval);

    try {
      state.info = await api("/api/info");
    } catch (err) {
      banner(err.status === 401 ? "This page needs the URL that `toolnexus-agent web` printed: it carries the launch token." : err.message);
      return;
    }
    const info = state.info;
    $("#meta").replaceChildren(
      ...[
        info.demo ? el("span.chip.demo", { text: "demo · offline" }) : info.scripted ? el("span.chip.demo", { text: "scripted model" }) : null,
        el("span.chip", {}, el("span.dot"), info.model),
        el("span.chip", { text: plural(info.tools.length, "tool") }),
      ].filter(Boolean),
    );
    $("#store-note").textContent = info.store === "memory" ? "Kept in memory: conversations end with the server (--store FILE keeps them)." : `Store: ${info.store}`;
    $("#eval-run-card").hidden = !info.evals;
    $("#prompt").value = info.prompt || "";
    await loadRuns();
    setInterval(() => {
      if (!document.hidden) loadRuns();
    }, 5000);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
