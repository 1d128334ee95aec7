#!/usr/bin/env bash
# Takes the approval label off a pull request that lowers the bar beyond what the label approved,
# so the label's presence always means "this set is approved". action.yml runs it only where
# pr-check said so (a token that can write). With the default token no `unlabeled` run follows
# (GitHub starts no workflow for the events of a workflow's own token); with another token one
# does, and fails for the missing label.
#
# Environment: GITHUB_REPOSITORY, RAG_PR, RAG_UNLABEL (the label, URL-encoded by pr-check), GH_TOKEN.
set -euo pipefail

if gh api --method DELETE "repos/$GITHUB_REPOSITORY/issues/$RAG_PR/labels/$RAG_UNLABEL" --silent; then
  echo "rag: took the approval label off: it does not cover what the pull request lowers now"
else
  echo "::warning title=rag: label not taken off::the token could not remove the approval label; give the job \`permissions: pull-requests: write\`, or remove it by hand: it no longer approves what the pull request lowers"
fi
