from __future__ import annotations

import os
import subprocess

from rlguard.engine.discovery import discover


def test_skips_tool_folders_and_virtualenvs(tree):
    for relative in ("src/a.py", "src/b.pyi", ".git/x.py", "build/x.py", "dist/x.py", "src/__pycache__/x.py",
                     "env/lib/x.py", "notes.txt"):
        tree.write(relative, "x = 1\n")
    tree.write("env/pyvenv.cfg", "home = /usr\n")
    found = discover([tree.root])
    names = sorted(os.path.relpath(p, tree.root) for p in found.files)
    assert names == ["src/a.py", "src/b.pyi"]


def test_gitignore_is_respected_but_explicit_files_are_checked(tree):
    tree.write("keep.py", "x = 1\n")
    ignored = tree.write("generated/skip.py", "x = 1\n")
    tree.write(".gitignore", "generated/\n")
    subprocess.run(["git", "init", "-q", tree.root], check=True)
    found = discover([tree.root])
    assert [os.path.basename(p) for p in found.files] == ["keep.py"]
    assert discover([ignored]).files == [ignored]


def test_symlink_loop_and_fifo(tree):
    tree.write("pkg/a.py", "x = 1\n")
    os.symlink(os.path.join(tree.root, "pkg"), os.path.join(tree.root, "pkg", "loop"))
    os.mkfifo(os.path.join(tree.root, "pkg", "pipe.py"))
    found = discover([tree.root])
    assert [os.path.relpath(p, tree.root) for p in found.files] == ["pkg/a.py"]
    assert any(path.endswith("pipe.py") and "FIFO" in reason for path, reason in found.skipped)


def test_a_folder_named_explicitly_is_linted_even_if_gitignored(tree):
    tree.write(".gitignore", "vendor/\n")
    inside = tree.write("vendor/lib/a.py", "x = 1\n")
    subprocess.run(["git", "init", "-q", tree.root], check=True)
    assert discover([tree.root]).files == []
    assert discover([os.path.join(tree.root, "vendor")]).files == [inside]
