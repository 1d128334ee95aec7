"""An action input holding shell-quoted words (`-k "hybrid and not rerank"`), split as a POSIX shell
splits them and never evaluated: no variable, command or glob is expanded. The words go to stdout,
each ended by a NUL, for `while IFS= read -r -d '' word` in the step; a bad quote is one line on
stderr naming the input, and exit status 2.

Usage: python words.py INPUT-NAME VALUE
"""
import shlex
import sys

name, value = sys.argv[1], sys.argv[2]
try:
    words = shlex.split(value)
except ValueError as exc:
    print(f"rag: the input {name} is not shell-quoted words ({exc}): {value}", file=sys.stderr)
    sys.exit(2)
sys.stdout.write("".join(word + "\0" for word in words))
