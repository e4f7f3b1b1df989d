// The rules as a C ABI, JSON in and JSON out (issue 14, DESIGN §9): the same
// functions in the native library and in the wasm32-wasi module (wasm/), so
// the browser host asks the C++ rules, never a JavaScript re-write of them.
//
// Every rule function takes `in_len` bytes of strict JSON text (UTF-8, owned
// by the caller, not kept) and returns a buffer from taskyon_alloc holding
// JSON text, its length in *out_len (bytes, no NUL counted; a NUL follows).
// The caller frees it with taskyon_free. The answer is always one of
//   {"ok":true,"value":VALUE}
//   {"ok":false,"error":{"code":CODE,"message":TEXT,"where":TEXT}}
// with CODE the stable spelling of base/error.h (code_name): the same codes,
// messages and `where` as the native calls. Members are sorted (canonical
// order), so native and wasm answers compare as bytes.
//
// Inputs (an object unless said otherwise) and values:
//   canonicalize     any JSON text -> {"canonical": RFC 8785 text, "id": "sha256:..."}
//                    (json.h: canonicalize, content_id; the ids the CLI prints)
//   manifest         a tool definition -> {"revision","name","execution","needsTrust"}
//                    (registry/manifest.h; the id `tycli tool install` prints)
//   validate_arguments {"parameters": schema, "arguments": value} or
//                    {"manifest": definition, "arguments": value} -> {"valid": true};
//                    the schema is checked first (invalid_manifest), then the
//                    arguments (invalid_arguments), as registry/schema.h does
//   parse_url        {"url": text} -> {"href","origin","scheme","host","hostKind",
//                    "hostInput","port","path","query","fragment","special",
//                    "hasCredentials"} (capability/url.h; absent parts are null;
//                    href is the standard's serialization, userinfo included)
//   decide_fetch     {"url": text, "method"?: text (default "GET"), "resolved"?: [address text]}
//                    -> {"verdict","access","reasonClass","reason","method","methodReason",
//                    "href","origin","host","admitted","awaitingResolution"}: the
//                    decision fields of `tycli policy check --json`
//                    (capability/policy.h) plus `awaitingResolution` (true when
//                    no address was given and the name still needs resolving);
//                    the CLI's `resolved` list is not echoed. With "resolved",
//                    decide_url() on those answers; without it,
//                    decide_url_unresolved() (a browser cannot resolve names).
//   compile          {"draft": {role, content, labels?}, "lineage"?: [TASK…], "registry"?: TABLE}
//                    -> {"task": TASK, "tool": null | {"revision","settingsRevision","name","definedAt"}}
//                    (tasks/compiler.h: the draft compiled below the lineage's last task, a
//                    function call pinned to the tool it resolves to, T1, T4-T7)
//   compile_subtasks {"request": {"drafts": […]}, "lineage": [TASK…, CALL], "registry"?: TABLE,
//                    "already"?: N} -> {"tasks": [TASK…]} | {"refused": {"code","message","detail"}}
//                    (tasks/tool_requests.h, M14: createSubtasksResult as the CLI decides it;
//                    `message` is the tool's to read, `detail` the audit's)
//   resolve_invocation {"request": {"name"}, "lineage": [TASK…, CALL], "registry"?: TABLE}
//                    -> {"tool","settingsRevision"} | {"refused": {…}} (M15)
//                    Both answer the real ids, for the host's store and audit: the host shows
//                    tool code opaque identities in place of every task id and revision
//                    (store/settings.h task_identity, revision_identity, settings_identity;
//                    browser/host/tasks.js), since each is a hash a guess could confirm.
//   check_task       {"task": TASK} -> {"task": TASK} (tasks::parse_task: shape, T3, and the id
//                    re-hashed, T4; a task a store read back)
//                    TASK is tasks::task_json's form; a lineage is root first, each task's
//                    parentId the one before it, each re-hashed. TABLE is the registry as the
//                    caller read it: {REF: {"definition": MANIFEST, "settingsRevision"?}}, REF a
//                    tool name (its active binding) or a full revision id; a REF it lacks is
//                    not_found; settingsRevision defaults to the empty settings' id.
//   info             anything -> {"abi": 2 (compile, compile_subtasks, resolve_invocation, check_task since 2), "idna": bool, "build": "native"|"wasm32-wasi"}
//
// Input limits are json/parse.h's defaults (nesting depth, text size); `in`
// may be null only with in_len 0 (empty text: invalid_json); `out_len` may be
// null. On wasm a schema valijson cannot read traps (no exceptions there,
// docs/browser.md): the loader answers internal and re-instantiates.
//
// Errors: invalid_json for text that is not strict JSON; bad_usage for an
// input of the wrong shape (where: its JSON pointer); the rule's own error
// otherwise. A decision (deny) is a value, never an error.
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Memory for inputs and answers: malloc/free (at least 1 byte for size 0).
// Never returns null on wasm (a failed allocation traps); natively null only
// when malloc fails.
char* taskyon_alloc(size_t size);
void taskyon_free(char* buffer);

char* taskyon_canonicalize(const char* in, size_t in_len, size_t* out_len);
char* taskyon_manifest(const char* in, size_t in_len, size_t* out_len);
char* taskyon_validate_arguments(const char* in, size_t in_len, size_t* out_len);
char* taskyon_parse_url(const char* in, size_t in_len, size_t* out_len);
char* taskyon_decide_fetch(const char* in, size_t in_len, size_t* out_len);
char* taskyon_compile(const char* in, size_t in_len, size_t* out_len);
char* taskyon_compile_subtasks(const char* in, size_t in_len, size_t* out_len);
char* taskyon_resolve_invocation(const char* in, size_t in_len, size_t* out_len);
char* taskyon_check_task(const char* in, size_t in_len, size_t* out_len);
char* taskyon_info(const char* in, size_t in_len, size_t* out_len);

#ifdef __cplusplus
}
#endif
