#!/usr/bin/env bash
# The pull request's baseline check, as action.yml runs it: compare the config's baseline and
# settings with the base branch's, then pass, or fail unless the approval label is on the pull
# request and approved what it lowers (the record in the action's own comment, read with `gh`).
# tests/e2e/test_action_dry_run.py runs this same file on a git repository.
#
# Environment: GITHUB_BASE_REF (empty outside pull requests), GITHUB_EVENT_PATH, RAG_REPORTS
# (folder for baseline-changes.json, baseline-decision.json and approved-comment.md), RAG_LABEL,
# RAG_CONFIG (the settings file; pyproject.toml means [tool.ragretrieval]), RAG_COMMENT (true or
# false); for the comment: GITHUB_REPOSITORY, RAG_PR, RAG_AUTHOR, GH_TOKEN.
# Under GitHub Actions, pr-check also writes check=, comment= and unlabel= to $GITHUB_OUTPUT.
set -euo pipefail

# The token reaches `gh` only: the commands below may load the pull request's own code (its
# retrievers' entry points), which has no business with it.
token="${GH_TOKEN:-}"
unset GH_TOKEN

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
# Today's rankings come from the gate's own results of this job, never from the head's baseline.
today=()
if [ -f "$reports/rag-eval.json" ]; then
  today=(--today "$reports/rag-eval.json")
fi
ragretrieval diff --against "$base" --fail-on-lower --json "$reports/baseline-changes.json" "${config[@]}" \
  "${today[@]}" || status=$?
if [ "$status" -gt 1 ]; then
  exit "$status"
fi

comment=()
if [ "${RAG_COMMENT:-true}" != true ]; then
  comment=(--no-comment)
fi

# What the label approved: only ever the record in the action's own comment, never a file of the
# pull request. pr-check counts it only where the action could have written it.
approved=()
if [ -n "${RAG_PR:-}" ]; then
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/own-comment.sh"
  record="$reports/approved-comment.md"
  if ! GH_TOKEN="$token" own_comment_body > "$record"; then
    echo "::warning title=rag: approval not read::the pull request's comments could not be read: no recorded approval counts"
  elif [[ "$(head -n 1 "$record")" == edited-by\ * ]]; then
    echo "::notice title=rag: approval record ignored::the action's comment was last edited by $(head -n 1 "$record" | cut -d' ' -f2-), so the approval it records is not counted"
  elif [ -s "$record" ]; then
    approved=(--approved "$record")
  fi
fi
ragretrieval pr-check "$reports/baseline-changes.json" --label "${RAG_LABEL:-rag-baseline-approved}" \
  --json "$reports/baseline-decision.json" "${comment[@]}" "${approved[@]}"
