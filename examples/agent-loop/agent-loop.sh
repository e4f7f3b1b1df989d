#!/usr/bin/env bash
# An offline agent loop with a scripted "model": no network, no API key. The
# loop does what a real one does with a provider's API, and nothing more:
#   1. lists the tools in the provider's shape (`tycli chat tools --format …`),
#   2. hands each tool call the model makes to tycli verbatim
#      (`tycli chat call --at NODE --tool-call JSON`),
#   3. gives the model the printed `role: tool` answer and continues --at the
#      node tycli names.
# The scripted model makes three calls, one per provider shape: a valid one
# (OpenAI Chat Completions), one with invalid arguments (OpenAI Responses),
# and one whose tool throws (Anthropic). Each answer carries the model's own
# call id; `tycli chat messages` at the end shows them in the transcript.
#
# Usage: examples/agent-loop/agent-loop.sh [PATH/TO/tycli | tycli]   (from anywhere; default build/tycli)
set -euo pipefail
tycli=${1:-build/tycli}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=$here/../tools
home=$(mktemp -d "${TMPDIR:-/tmp}/taskyon-agent-loop.XXXXXX")
trap 'rm -rf "$home"' EXIT
export TASKYON_HOME=$home

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

"$tycli" tool install "$tools/add.json" "$here/divide.json" >/dev/null

say "The tools, as each provider wants them (no --at: the registry's active tools)"
for format in openai-chat openai-responses anthropic mcp; do
  printf -- '--format %s\n' "$format"
  "$tycli" chat tools --format "$format"
done
printf -- '--format openai-chat --strict\n'
"$tycli" chat tools --format openai-chat --strict

say "The user's question starts the conversation"
at=$("$tycli" --json run "$here/conversation.json" | sed -n 's/.*"roots":\["\(sha256:[0-9a-f]*\)".*/\1/p')
echo "root: $at"

# The scripted model: one tool call per turn, exactly as each API returns it.
turns=(
  '{"id": "call_Wq7Zs2Ab", "type": "function", "function": {"name": "add", "arguments": "{\"num1\": 2, \"num2\": 40}"}}'
  '{"type": "function_call", "id": "fc_9Kd1", "call_id": "call_Yt4Mn8Pq", "name": "add", "arguments": "{\"num1\": \"forty\", \"num2\": 2}"}'
  '{"type": "tool_use", "id": "toolu_01XbC3dE", "name": "divide", "input": {"dividend": 1, "divisor": 0}}'
)
for call in "${turns[@]}"; do
  say "The model calls a tool"
  echo "model: $call"
  out=$("$tycli" --json chat call --at "$at" --tool-call "$call")
  echo "tycli: $out"
  at=$(printf '%s' "$out" | sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
  [ -n "$at" ] || { echo "agent-loop: no node to continue at" >&2; exit 1; }
done

say "The transcript the model sees next (its own call ids)"
"$tycli" chat messages --at "$at"
