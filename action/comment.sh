#!/usr/bin/env bash
# The sticky pull-request comment, as action.yml posts it: render it with `ragretrieval comment`,
# then edit this workflow's earlier comment (found by its hidden marker) or create the first one.
# Runs only where pr-check said the token may write (not on forks). tests/e2e/test_action_dry_run.py runs
# this same file with a stand-in `gh` first on PATH.
#
# Environment: RAG_REPORTS, RAG_PR (the pull request's number), GITHUB_REPOSITORY, GH_TOKEN,
# RAG_AUTHOR (the login the token posts as), RAG_GATE_OUTCOME, RAG_ARTIFACT_URL, RAG_RUN_URL and RAG_SWEEP
# (each may be empty).
set -euo pipefail

reports="${RAG_REPORTS:-reports}"
body="$reports/comment.md"
args=()
if [ -f "$reports/rag-eval.json" ]; then
  args+=("$reports/rag-eval.json")
fi
for kind in changes decision; do
  file="$reports/baseline-$kind.json"
  flag=--decision
  [ "$kind" = changes ] && flag=--baseline-changes
  if [ -f "$file" ]; then
    args+=("$flag" "$file")
  fi
done
# The sweep's record (`ragretrieval tune --record`), named where this pull request adds or changes it (an
# older record is an older sweep's): informational, no verdict reads it.
if [ -n "${RAG_SWEEP:-}" ] && [ -f "$RAG_SWEEP" ] \
    && ! git diff --quiet "origin/${GITHUB_BASE_REF:-}" -- "$RAG_SWEEP" 2>/dev/null; then
  args+=(--sweep "$RAG_SWEEP")
fi
args+=(--gate-outcome "${RAG_GATE_OUTCOME:-}" --artifact-url "${RAG_ARTIFACT_URL:-}" --run-url "${RAG_RUN_URL:-}")
# `>` would write into a device or block on a FIFO: only a regular file (or none yet) is replaced.
if [ -e "$body" ] && [ ! -f "$body" ]; then
  echo "::error title=rag: comment not written::$body is not a regular file (a directory, device, FIFO or socket); give the action's reports input a folder of its own"
  exit 1
fi
ragretrieval comment "${args[@]}" > "$body"

# Only the action's own comment (its author, its marker: see own-comment.sh) is edited.
# shellcheck source=/dev/null
source "$(dirname "${BASH_SOURCE[0]}")/own-comment.sh"
ids=$(own_comments id)
id="${ids%%$'\n'*}"
if [ -n "$id" ]; then
  request=(--method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id")
else
  request=(--method POST "repos/$GITHUB_REPOSITORY/issues/$RAG_PR/comments")
fi
if ! url=$(gh api "${request[@]}" -F "body=@$body" --jq .html_url); then
  echo "::error title=rag: comment not posted::the token could not write the comment; give the job \`permissions: pull-requests: write\`"
  exit 1
fi
echo "rag: comment: $url"
