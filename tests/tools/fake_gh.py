"""A stand-in for the `gh` CLI, enough for the action's scripts: `gh api` on one pull request's
comments and labels, and the GraphQL query that names a comment's last editor.

The dry run of the action puts it first on PATH as `gh`. It keeps the comments, the labels and
every call in the JSON file named by $FAKE_GH_STATE; answers only the exact --jq filters and query
the scripts use (anything else is an error, so a changed filter cannot pass unnoticed); posts and
edits as $FAKE_GH_LOGIN (default github-actions[bot]); refuses to run without $GH_TOKEN; and fails every write with HTTP 403 when
$FAKE_GH_READ_ONLY is set, as GitHub does for a read-only token. As on GitHub, REST names a bot
`name[bot]` and GraphQL `name`, and an edit makes its author the comment's `editor`.
"""
from __future__ import annotations

import json
import os
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

MARKER = "<!-- pytest-ragretrieval -->"
LISTING = re.compile(r'\.\[\] \| select\(\.user\.login == "([^"]+)" and \(\.body \| startswith\("'
                     + re.escape(MARKER) + r'"\)\)\) \| \.(id|node_id)')
QUERY = "query($id: ID!) { node(id: $id) { ... on IssueComment { body author { login } editor { login } } } }"
NODE = ('.data.node | if .editor == null or .editor.login == .author.login then .body else "edited-by " + '
        ".editor.login end")


def graphql_login(login: str) -> str:
    return login.removesuffix("[bot]")


def parse(argv: list[str]) -> tuple[str, str, str | None, dict[str, str], bool]:
    """(method, path, --jq, the -f/-F fields, --paginate) of a `gh api` call."""
    args = list(argv)
    assert args.pop(0) == "api", argv
    method, path, jq, fields, paginate = "GET", "", None, {}, False
    while args:
        arg = args.pop(0)
        if arg == "--method":
            method = args.pop(0)
        elif arg == "--jq":
            jq = args.pop(0)
        elif arg == "--paginate":
            paginate = True
        elif arg == "--silent":
            continue
        elif arg in ("-F", "-f"):
            key, _, value = args.pop(0).partition("=")
            from_file = arg == "-F" and value.startswith("@")
            fields[key] = Path(value[1:]).read_text(encoding="utf-8") if from_file else value
        else:
            path = arg
    return method, path, jq, fields, paginate


def answer(state: dict[str, Any], argv: list[str]) -> int:
    method, path, jq, fields, paginate = parse(argv)
    login = os.environ.get("FAKE_GH_LOGIN", "github-actions[bot]")
    if method != "GET" and os.environ.get("FAKE_GH_READ_ONLY"):
        print("gh: Resource not accessible by integration (HTTP 403)", file=sys.stderr)
        return 1
    listing = re.fullmatch(r"repos/[^/]+/[^/]+/issues/(\d+)/comments", path)
    one = re.fullmatch(r"repos/[^/]+/[^/]+/issues/comments/(\d+)", path)
    label = re.fullmatch(r"repos/[^/]+/[^/]+/issues/(\d+)/labels/([^/]+)", path)
    if path == "graphql":
        assert fields.get("query") == QUERY and jq == NODE, (fields, jq)
        comment = next(c for c in state["comments"] if c["node_id"] == fields["id"])
        editor = comment.get("editor")
        if editor is None or graphql_login(editor) == graphql_login(comment["user"]["login"]):
            print(comment["body"])
        else:
            print(f"edited-by {graphql_login(editor)}")
        return 0
    if method == "GET" and listing:
        found = LISTING.fullmatch(jq or "")
        assert paginate and found, (paginate, jq)
        for comment in state["comments"]:
            if comment["user"]["login"] == found.group(1) and comment["body"].startswith(MARKER):
                print(comment[found.group(2)])
        return 0
    if method == "DELETE" and label:
        name = urllib.parse.unquote(label.group(2))
        if name not in state["labels"]:
            print("gh: Label does not exist (HTTP 404)", file=sys.stderr)
            return 1
        state["labels"].remove(name)
        return 0
    if method == "POST" and listing:
        number = 1000 + len(state["comments"])
        comment = {"id": number, "node_id": f"IC_{number}", "user": {"login": login, "type": "Bot"},
                   "body": fields["body"], "editor": None}
        state["comments"].append(comment)
    elif method == "PATCH" and one:
        comment = next(c for c in state["comments"] if c["id"] == int(one.group(1)))
        if comment["user"]["login"] != login:
            print("gh: Forbidden (HTTP 403)", file=sys.stderr)
            return 1
        comment["body"], comment["editor"] = fields["body"], login
    else:
        print(f"gh: unexpected call {argv}", file=sys.stderr)
        return 2
    assert jq == ".html_url", jq
    print(f"https://github.invalid/comments/{comment['id']}")
    return 0


def main(argv: list[str]) -> int:
    state_path = Path(os.environ["FAKE_GH_STATE"])
    state: dict[str, Any] = json.loads(state_path.read_text(encoding="utf-8"))
    state["calls"].append(argv)
    if not os.environ.get("GH_TOKEN"):  # as gh answers in a job without a token
        print("To get started with GitHub CLI, please run:  gh auth login", file=sys.stderr)
        state_path.write_text(json.dumps(state), encoding="utf-8")
        return 4
    try:
        return answer(state, argv)
    finally:
        state_path.write_text(json.dumps(state), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
