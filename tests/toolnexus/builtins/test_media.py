"""``read`` of an image or a PDF returns the file as an attachment."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.builtins import _media


def test_read_of_an_image_or_pdf_is_an_attachment(tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x01")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n\x00")
    tk = tn.build(root=tmp_path)
    image = tn.execute(tk, "read", {"path": "chart.png"})
    assert (image.is_error, image.output) == (False, "chart.png is attached (image, 10 bytes).")
    [attached] = image.attachments
    assert (attached.mime_type, attached.data, attached.name) == (
        "image/png",
        b"\x89PNG\r\n\x1a\n\x00\x01",
        "chart.png",
    )
    pdf = tn.execute(tk, "read", {"path": "doc.pdf"})
    assert pdf.attachments[0].mime_type == "application/pdf"


def test_other_binary_files_are_still_refused(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    result = tn.execute(tn.build(root=tmp_path), "read", {"path": "blob.bin"})
    assert result.is_error and "binary file" in result.output


def test_an_image_over_the_cap_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_media, "MEDIA_CAP", 4)
    (tmp_path / "big.jpg").write_bytes(b"\xff\xd8\xff\xe0data")
    result = tn.execute(tn.build(root=tmp_path), "read", {"path": "big.jpg"})
    assert result.is_error and "over the 4 bytes" in result.output
    assert result.attachments == ()
