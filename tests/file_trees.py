"""Writes small file trees for the tests that scan, pack or import a folder of files."""

import pathlib


def write_files(root, files):
    """Writes ``files`` ({relative path: text}) under ``root``, making folders as needed;
    returns ``root`` as a path."""
    root = pathlib.Path(root)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
