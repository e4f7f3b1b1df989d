#!/usr/bin/env bash
# The main job on the bundled tools: install them as content-addressed
# revisions in a fresh store, call each in its Node sandbox, then activate a
# second revision and show that a stored, pinned call still runs the first;
# then the fetch capability's refusals, the audit log, the sandbox log, and
# the security diagnostics. No step needs the internet.
set -euo pipefail
tycli=${1:-build/tycli}
home=$(mktemp -d "${TMPDIR:-/tmp}/taskyon-demo.XXXXXX")
trap 'rm -rf "$home"' EXIT
export TASKYON_HOME=$home

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ tycli %s\n' "$*"; "$tycli" "$@"; }

step "Install the example tools (revision id = sha256 of the RFC 8785 canonical manifest)"
run tool install examples/tools/*.json
run tool list

step "Call each tool in its sandbox"
run call uppercase --args '{"input": "hello from taskyon"}'
run call add --args '{"num1": 2.5, "num2": 40}'
run call text_stats --args '{"text": "The sandbox runs the tool. The tool sees only its arguments!\nNothing else.", "top": 3}'
run call json_path --args '{"document": {"tools": [{"name": "add"}, {"name": "uppercase"}]}, "path": "$.tools[*].name"}'

step "Retained sandbox: three calls of one revision share memory (one tycli process)"
run call counter --verbose --args '{}' --args '{"step": 10}' --args '{}'

step "A tool that uses an npm library: papaparse, stored by content id and named in the manifest"
run module add node_modules/papaparse
run tool install examples/modules/csv_to_json.json
run call csv_to_json --verbose --args '{"csv": "tool,calls\nuppercase,3\ncounter,12"}' --args '{"csv": "a,b\n1,2"}'

step "Arguments are validated against the tool's parameters before any code runs"
run call add --args '{"num1": "two", "num2": 3}' || echo "(exit $?: refused before running)"

step "A stuck tool is killed at its timeout; the next call gets a fresh sandbox"
cat > "$home/stuck.json" <<'JSON'
{"name": "stuck", "description": "Never returns.", "parameters": {"type": "object"},
 "execution": "sandboxed-code", "runtime": "javascript", "code": "() => { while (true) {} }"}
JSON
"$tycli" tool install "$home/stuck.json" >/dev/null
run call stuck --timeout 500 || echo "(exit $?: timeout)"

step "Pin a call, then activate a second revision of uppercase"
pinned=$("$tycli" --json call uppercase --args '{"input": "  pinned call  "}' | sed -n 's/.*"task":"\(sha256:[0-9a-f]*\)".*/\1/p')
echo "stored call task: $pinned"
run tool install examples/revisions/uppercase-v2.json
v2=$("$tycli" --json tool install examples/revisions/uppercase-v2.json | sed -n 's/.*"revision":"\(sha256:[0-9a-f]*\)".*/\1/p')
run tool activate uppercase "${v2:0:19}"
run tool history uppercase

step "A new call by name runs the active revision (v2 trims)"
run call uppercase --args '{"input": "  pinned call  "}'

step "The stored call re-runs on its pinned revision (v1 keeps the spaces)"
run call --task "$pinned" --verbose

step "The main job: run a conversation with nested, scoped tool definitions"
run run examples/conversations/scoped-tools.json

step "Running it again finds the same tasks (content-addressed ids): nothing new"
run run examples/conversations/scoped-tools.json | tail -n 1

step "A binding pins the first uppercase revision inside its scope; outside it, the active v2 answers"
run run examples/conversations/pinned-binding.json

step "What the model sees at the end of the German branch: reduced signatures, no definition nodes"
at=$("$tycli" --json run examples/conversations/scoped-tools.json |
     grep -o '"index":8,"reused":true,"task":"sha256:[0-9a-f]*"' | grep -o 'sha256:[0-9a-f]*')
run chat tools --at "${at:0:19}"
run chat copy --at "${at:0:19}"

step "A tool that fetches: refused without a grant, and by the URL policy whatever the grant"
cat > "$home/getter.json" <<'JSON'
{"name": "getter", "description": "GET a URL through the mediated fetch and report what came back",
 "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
 "execution": "sandboxed-code", "runtime": "javascript",
 "code": "async ({url}) => { try { const r = await fetch(url); return { status: r.status }; } catch (e) { return { refused: e.code, why: e.message }; } }"}
JSON
run tool install "$home/getter.json"
run call getter --args '{"url": "https://93.184.215.14/"}'
run grant fetch getter https://93.184.215.14 --access read
run grant list
run call getter --args '{"url": "http://169.254.169.254/latest/meta-data/"}'
run call getter --args '{"url": "https://0x7f.1/"}'
run audit

step "Every sandbox destroyed in this demo, and why (all tycli processes)"
run sandbox log --limit 8

step "The security contracts, proven on this machine against the real components"
run diagnostics --filter tool_security_contracts | tail -n 60
