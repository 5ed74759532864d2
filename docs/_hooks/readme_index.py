"""MkDocs hook: the site's home page is the repository's README.md, its links rewritten from the
repository root (``docs/x.md``) to the docs folder (``x.md``). The README stays the one source."""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files


def readme_as_index(text: str) -> str:
    """The README's text with ``](docs/...)`` links made relative to docs/."""
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files: Files, config) -> Files:
    readme = Path(config["config_file_path"]).parent / "README.md"
    files.append(File.generated(config, "index.md", content=readme_as_index(readme.read_text())))
    return files
