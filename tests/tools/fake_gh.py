"""A stand-in for the `gh` CLI, enough for action/comment.sh: `gh api` on one pull request's comments.

The dry run of the action puts it first on PATH as `gh`. It keeps the comments and every call in
the JSON file named by $FAKE_GH_STATE, answers the listing through the one --jq filter the script
uses (anything else is an error, so a changed filter cannot pass unnoticed), and fails with
HTTP 403 when $FAKE_GH_READ_ONLY is set, as GitHub does for a read-only token.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- pytest-ragretrieval -->"
FILTER = f'.[] | select(.user.type == "Bot" and (.body | startswith("{MARKER}"))) | .id'


def main(argv: list[str]) -> int:
    state_path = Path(os.environ["FAKE_GH_STATE"])
    state: dict[str, Any] = json.loads(state_path.read_text(encoding="utf-8"))
    state["calls"].append(argv)
    args = list(argv)
    assert args.pop(0) == "api", argv
    method, jq, fields, paginate = "GET", None, {}, False
    path = ""
    while args:
        arg = args.pop(0)
        if arg == "--method":
            method = args.pop(0)
        elif arg == "--jq":
            jq = args.pop(0)
        elif arg == "--paginate":
            paginate = True
        elif arg == "-F":
            key, _, value = args.pop(0).partition("=")
            fields[key] = Path(value[1:]).read_text(encoding="utf-8") if value.startswith("@") else value
        else:
            path = arg
    try:
        if method != "GET" and os.environ.get("FAKE_GH_READ_ONLY"):
            print("gh: Resource not accessible by integration (HTTP 403)", file=sys.stderr)
            return 1
        listing = re.fullmatch(r"repos/[^/]+/[^/]+/issues/(\d+)/comments", path)
        one = re.fullmatch(r"repos/[^/]+/[^/]+/issues/comments/(\d+)", path)
        if method == "GET" and listing:
            assert paginate and jq == FILTER, (paginate, jq)
            for comment in state["comments"]:
                if comment["user"]["type"] == "Bot" and comment["body"].startswith(MARKER):
                    print(comment["id"])
            return 0
        if method == "POST" and listing:
            comment = {"id": 1000 + len(state["comments"]), "user": {"type": "Bot"}, "body": fields["body"]}
            state["comments"].append(comment)
        elif method == "PATCH" and one:
            comment = next(c for c in state["comments"] if c["id"] == int(one.group(1)))
            comment["body"] = fields["body"]
        else:
            print(f"gh: unexpected call {argv}", file=sys.stderr)
            return 2
        assert jq == ".html_url", jq
        print(f"https://github.invalid/comments/{comment['id']}")
        return 0
    finally:
        state_path.write_text(json.dumps(state), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
