"""document.py - a small document model rendered twice: as one self-contained HTML page
(inline CSS, PNG images referenced beside it) and as a Markdown summary. Blocks are
headings, paragraphs, notes, the verdict banner, tables (pandas DataFrames; in HTML each in
a horizontally scrolling box with wrapping text cells, so no table is cut off at the page
edge), images and preformatted text."""
import html
import math
import os

import numpy as np

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #446; } h2 { border-bottom: 1px solid #99a; margin-top: 2em; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.5em 0 1.5em 0; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccd; padding: 2px 6px; text-align: right; vertical-align: top; }
th { background: #eef; } td.text { text-align: left; max-width: 36em; overflow-wrap: break-word; }
td.nowrap { white-space: nowrap; } td.text:not(.nowrap) { min-width: 16em; }
.verdict { font-size: 1.6em; font-weight: bold; padding: 0.4em 0.8em; border-radius: 4px; margin: 0.5em 0; }
.verdict.PASS { background: #d8f5d8; border-left: 8px solid #2a2; }
.verdict.FAIL { background: #fdd; border-left: 8px solid #c22; }
.verdict.INCOMPLETE { background: #ffe9c2; border-left: 8px solid #e90; }
tr.bad td { background: #fdd; } tr.warn td { background: #ffe9c2; }
.note { background: #fff6d5; border-left: 4px solid #e0b000; padding: 0.4em 0.8em; margin: 0.5em 0; }
pre { background: #f4f4f8; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1em 0; } figcaption { font-size: 0.9em; color: #555; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


def format_value(value):
    """Compact text of one table cell: 4 significant digits, '-' for missing values."""
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4g}"
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value)


class Document:
    """Blocks appended in order; html() and markdown() render them."""

    def __init__(self, title):
        self.title = title
        self.blocks = []

    def heading(self, text, level=2):
        self.blocks.append(("heading", text, level))

    def paragraph(self, text):
        self.blocks.append(("paragraph", text))

    def note(self, text):
        self.blocks.append(("note", text))

    def verdict(self, word, text):
        """The banner: word (PASS, FAIL or INCOMPLETE) and one line on why."""
        self.blocks.append(("verdict", word, text))

    def code(self, text, markdown=True):
        self.blocks.append(("code", text, markdown))

    def table(self, frame, caption=None, max_rows_html=400, max_rows_md=40, row_class=None):
        """row_class: optional function(row) -> '' | 'bad' | 'warn' to highlight HTML rows."""
        self.blocks.append(("table", frame, caption, max_rows_html, max_rows_md, row_class))

    def image(self, filename, caption):
        self.blocks.append(("image", filename, caption))

    def html(self):
        parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
                 f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head><body>",
                 f"<h1>{html.escape(self.title)}</h1>"]
        for block in self.blocks:
            parts.append(self._html_block(block))
        parts.append("</body></html>")
        return "\n".join(parts)

    def markdown(self):
        parts = [f"# {self.title}", ""]
        for block in self.blocks:
            text = self._md_block(block)
            if text is not None:
                parts.extend([text, ""])
        return "\n".join(parts)

    def write(self, outdir, stem):
        """Write STEM.html and STEM.md into outdir; returns both paths."""
        html_path = os.path.join(outdir, f"{stem}.html")
        md_path = os.path.join(outdir, f"{stem}.md")
        with open(html_path, "w", encoding="utf-8") as f:
            f.write(self.html())
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(self.markdown())
        return html_path, md_path

    @staticmethod
    def _html_table(frame, caption, max_rows, row_class):
        if frame is None or len(frame) == 0:
            return "<p class='note'>(no rows)</p>"
        shown = frame.head(max_rows)
        out = ["<div class='scroll'><table>"]
        if caption:
            out.append(f"<caption>{html.escape(caption)}</caption>")
        out.append("<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns) + "</tr>")
        for _, row in shown.iterrows():
            cls = row_class(row) if row_class else ""
            cells = []
            for value in row:
                text = format_value(value)
                kind = "" if isinstance(value, (int, float, np.number)) else \
                    " class='text nowrap'" if len(text) <= 24 else " class='text'"
                cells.append(f"<td{kind}>{html.escape(text)}</td>")
            out.append(f"<tr class='{cls}'>" + "".join(cells) + "</tr>" if cls else "<tr>" + "".join(cells) + "</tr>")
        out.append("</table></div>")
        if len(frame) > max_rows:
            out.append(f"<p>({len(frame) - max_rows} more rows not shown)</p>")
        return "\n".join(out)

    @staticmethod
    def _md_table(frame, caption, max_rows):
        if frame is None or len(frame) == 0:
            return "(no rows)"
        shown = frame.head(max_rows)

        def cell(v):
            return format_value(v).replace("|", "\\|").replace("\n", " ")

        lines = []
        if caption:
            lines.extend([f"*{caption}*", ""])
        lines.append("| " + " | ".join(cell(c) for c in shown.columns) + " |")
        lines.append("|" + "|".join("---" for _ in shown.columns) + "|")
        for _, row in shown.iterrows():
            lines.append("| " + " | ".join(cell(v) for v in row) + " |")
        if len(frame) > max_rows:
            lines.append(f"\n({len(frame) - max_rows} more rows in the HTML report)")
        return "\n".join(lines)

    def _html_block(self, block):
        kind = block[0]
        if kind == "heading":
            return f"<h{block[2]}>{html.escape(block[1])}</h{block[2]}>"
        if kind == "paragraph":
            return f"<p>{html.escape(block[1])}</p>"
        if kind == "note":
            return f"<p class='note'>{html.escape(block[1])}</p>"
        if kind == "verdict":
            return (f"<div class='verdict {html.escape(block[1])}'>VERDICT: {html.escape(block[1])}</div>"
                    f"<p>{html.escape(block[2])}</p>")
        if kind == "code":
            return f"<pre>{html.escape(block[1])}</pre>"
        if kind == "table":
            _, frame, caption, max_html, _, row_class = block
            return self._html_table(frame, caption, max_html, row_class)
        _, filename, caption = block
        return (f"<figure><img src='{html.escape(filename)}' alt='{html.escape(caption)}'>"
                f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def _md_block(self, block):
        kind = block[0]
        if kind == "heading":
            return "#" * block[2] + " " + block[1]
        if kind == "paragraph":
            return block[1]
        if kind == "note":
            return f"> **Note:** {block[1]}"
        if kind == "verdict":
            return f"**VERDICT: {block[1]}** - {block[2]}"
        if kind == "code":
            return f"```\n{block[1].rstrip()}\n```" if block[2] else None
        if kind == "table":
            _, frame, caption, _, max_md, _ = block
            return self._md_table(frame, caption, max_md)
        _, filename, caption = block
        return f"![{caption}]({filename})"
