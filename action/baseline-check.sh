#!/usr/bin/env bash
# The pull request's baseline check, as action.yml runs it: compare the config's baseline and
# settings with the base branch's, then pass, or fail unless the approval label is on the pull
# request. tests/e2e/test_action_dry_run.py runs this same file on a two-commit repository.
#
# Environment: GITHUB_BASE_REF (empty outside pull requests), GITHUB_EVENT_PATH, RAG_REPORTS
# (folder for baseline-changes.json and baseline-decision.json), RAG_LABEL, RAG_CONFIG (the
# settings file; pyproject.toml means [tool.ragretrieval]), RAG_COMMENT (true or false).
# Under GitHub Actions, pr-check also writes check= and comment= to $GITHUB_OUTPUT.
set -euo pipefail

reports="${RAG_REPORTS:-reports}"
mkdir -p "$reports"
if [ -z "${GITHUB_BASE_REF:-}" ]; then
  echo "rag: not a pull request: no base branch to compare the baseline with"
  exit 0
fi

# actions/checkout fetched one commit; the base branch's tip is all the comparison reads.
base="origin/$GITHUB_BASE_REF"
git fetch --no-tags --depth=1 origin "+refs/heads/$GITHUB_BASE_REF:refs/remotes/$base"

config=()
if [ "${RAG_CONFIG:-pyproject.toml}" != pyproject.toml ]; then
  config=(--config "$RAG_CONFIG")
fi
# Exit 1 only says that the bar was lowered, which the label may approve: pr-check decides.
status=0
ragretrieval diff --against "$base" --fail-on-lower --json "$reports/baseline-changes.json" "${config[@]}" || status=$?
if [ "$status" -gt 1 ]; then
  exit "$status"
fi

comment=()
if [ "${RAG_COMMENT:-true}" != true ]; then
  comment=(--no-comment)
fi
ragretrieval pr-check "$reports/baseline-changes.json" --label "${RAG_LABEL:-rag-baseline-approved}" \
  --json "$reports/baseline-decision.json" "${comment[@]}"
