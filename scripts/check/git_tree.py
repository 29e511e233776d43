"""Test support for the checks that read a git tree (doc_paths, sizes):
a throw-away repository holding the given files, all of them tracked."""
import os
import subprocess
import tempfile


def make(files):
    """Writes FILES ({path: text}) under a new temporary directory, makes it a
    git repository with every file added, and returns its path."""
    root = tempfile.mkdtemp()
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)
    subprocess.run(['git', 'init', '-q', root], check=True)
    subprocess.run(['git', 'add', '-A'], cwd=root, check=True)
    return root
