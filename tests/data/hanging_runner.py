"""A ``command:`` runner that never answers, with a child of its own: ``hanging_runner.py MARKER CASE_DIR
OUT_DIR`` (the marker in both command lines lets a test find them)."""

import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(600)  # {sys.argv[1]}"])
time.sleep(600)
