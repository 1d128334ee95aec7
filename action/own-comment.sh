# shellcheck shell=bash
# Sourced by baseline-check.sh and comment.sh: the pull request's comment this action posted.
# A comment is the action's only when its author is $RAG_AUTHOR (the login the token posts as:
# github-actions[bot] for the default token) and it starts with the marker: never a person's or
# another bot's quoting the marker. GitHub sets a comment's author; nobody can post as another.
#
# Environment: GITHUB_REPOSITORY, RAG_PR, RAG_AUTHOR, GH_TOKEN.

# own_comments FIELD: FIELD (id or node_id) of each of the action's comments, oldest first.
own_comments() {
  local author="${RAG_AUTHOR:-github-actions[bot]}"
  # The login goes into the jq filter: only what GitHub allows in a login passes.
  if ! [[ "$author" =~ ^[A-Za-z0-9][A-Za-z0-9-]*(\[bot\])?$ ]]; then
    echo "::error title=rag: bad comment-author::'$author' is not a GitHub login (letters, digits, hyphens, then [bot] for an app); fix the action's comment-author input" >&2
    return 2
  fi
  gh api --paginate "repos/$GITHUB_REPOSITORY/issues/$RAG_PR/comments" \
    --jq ".[] | select(.user.login == \"$author\" and (.body | startswith(\"<!-- pytest-ragretrieval -->\"))) | .$1"
}

# own_comment_body: the text of the action's first comment, or nothing when there is none. A
# comment someone else edited last (GraphQL names the last editor; REST does not) prints
# `edited-by LOGIN` instead: what it records was not written by the action.
own_comment_body() {
  local nodes
  nodes=$(own_comments node_id) || return $?
  if [ -z "$nodes" ]; then
    return 0
  fi
  # shellcheck disable=SC2016 # $id is GraphQL's variable, not the shell's
  gh api graphql -f id="${nodes%%$'\n'*}" \
    -f query='query($id: ID!) { node(id: $id) { ... on IssueComment { body author { login } editor { login } } } }' \
    --jq '.data.node | if .editor == null or .editor.login == .author.login then .body else "edited-by " + .editor.login end'
}
