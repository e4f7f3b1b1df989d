  // --- The guest core, shared by the Node and Deno harnesses ----------------
  // src/guest/common/core.js, inserted by cmake/embed_file.cmake where a
  // harness says `// @include common/core.js`, inside the harness's own
  // function scope: nothing here becomes a global. It holds everything the two
  // runtimes do alike: frames out, logs, serializing results, describing
  // thrown values, the capability client, one fresh `context` per call, and
  // the host frames in. A harness calls guestCore(io) once, before any tool
  // code runs, with what differs per runtime:
  //   io.writeBytes(text)        writes `text` (one frame with its '\n') to fd 1, blocking
  //   io.utf8Length(text)        UTF-8 bytes of `text`
  //   io.bytesOfText(text)       `text` as UTF-8 bytes (Uint8Array)
  //   io.toBase64(bytes) / io.fromBase64(text)
  //   io.fatal(code, message)    a message on fd 2 and exit(code); never returns
  //   io.loadTool(code, importDynamic)  the tool's function, or a promise of it; throws on
  //                              bad code. importDynamic (null: no modules declared) is
  //                              what every import() in the code must become
  //   io.compileModule(source, name, importDynamic)  a CommonJS module's source as the
  //                              function (exports, require, module, __filename, __dirname),
  //                              not yet run; its import() is importDynamic (null: none)
  //   io.builtin                 (name) => a runtime module of the safe list (kSafeBuiltins),
  //                              or null when the runtime has none to require()
  //   io.importBuiltin(name)     a promise of that runtime module (as require() gives it),
  //                              for an ES import
  //   io.esm()                   a promise of {SourceTextModule, SyntheticModule} (node:vm),
  //                              or of null when the runtime has none; asked once, by a
  //                              revision that declares modules
  //   io.esmConditions           package.json "exports" conditions of an import, in order
  //   io.setRequire(fn, gate)    makes `fn` the `require` tool code sees, and `gate`
  //                              (a runtime module by name, kSafeBuiltins only) its
  //                              process.getBuiltinModule
  //   io.limits                  {maxFrameBytes, maxLogBytes, maxDepth} from the host's argv
  // and gets back {emitLog, onLine, onFrame, describe, warmUp, importFromHarness}:
  // onFrame(frame) is onLine for a frame already parsed (JSON.parse);
  // warmUp() runs the call path once before a load frame (see below); and
  // importFromHarness(specifier) must answer every import() the runtime
  // routes to the harness's own script — code that Function or eval made
  // while a frame of the harness was on top (the harness calling a function
  // tool code supplied: the tool, a toString, a getter, a then) — so it is
  // the tool's own loader in a revision with modules and a refusal
  // otherwise, never the runtime's loader.
  function guestCore(io) {
    // Snapshots, taken before any tool code runs. Harness integrity is not a
    // security property (the host validates every frame); these keep an
    // honest tool that patches JSON, Map or Promise from breaking the protocol.
    const ReflectApply = Reflect.apply;
    const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
    const stringify = JSON.stringify;
    const parse = JSON.parse;
    const isWellFormed = uncurry(String.prototype.isWellFormed);
    const toWellFormed = uncurry(String.prototype.toWellFormed);
    const stringSlice = uncurry(String.prototype.slice);
    const charCodeAt = uncurry(String.prototype.charCodeAt);
    const stringIndexOf = uncurry(String.prototype.indexOf);
    const freeze = Object.freeze;
    const defineProperty = Object.defineProperty;
    const StringCtor = String;
    const NumberCtor = Number;
    const isFiniteNumber = Number.isFinite;
    const PromiseCtor = Promise;
    const MapCtor = Map;
    const mapGet = uncurry(Map.prototype.get);
    const mapSet = uncurry(Map.prototype.set);
    const mapDelete = uncurry(Map.prototype.delete);
    const ArrayBufferCtor = ArrayBuffer;
    const isArrayBufferView = ArrayBuffer.isView;
    const arrayPush = uncurry(Array.prototype.push);
    const Uint8ArrayCtor = Uint8Array;
    const ErrorCtor = Error;
    const TypeErrorCtor = TypeError;
    const BlobCtor = Blob;
    const blobArrayBuffer = uncurry(Blob.prototype.arrayBuffer);
    const URLSearchParamsCtor = URLSearchParams;
    const URLCtor = URL;
    const AbortControllerCtor = AbortController;
    const abortControllerAbort = uncurry(AbortController.prototype.abort);
    const controllerSignal = uncurry(Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal').get);
    const signalAborted = uncurry(Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get);
    const signalReason = uncurry(Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'reason').get);
    const addEventListener = uncurry(EventTarget.prototype.addEventListener);
    const removeEventListener = uncurry(EventTarget.prototype.removeEventListener);
    const isAbortSignal = (value) => {
      try { signalAborted(value); return true; } catch { return false; }
    };
    const { maxFrameBytes, maxLogBytes, maxDepth } = io.limits;

    // The fetch classes are built on first use (issue 19): in Node, touching
    // Response, Headers or Request loads its whole fetch implementation
    // (about half of a sandbox's start and +5 MiB). Each global keeps its
    // place, now as the harness's own lazy getter (assigning it replaces it,
    // as before); whoever reaches it first — tool code through the global, or
    // the harness's fetch — builds it from the runtime's original getter,
    // and the harness snapshots the methods it uses at that moment, before
    // tool code can hold the class.
    const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
    function lazyGlobal(name, onBuilt) {
      const d = getOwnPropertyDescriptor(globalThis, name);
      let built = false, value;
      const build = () => {
        if (!built) {
          built = true;
          value = d === undefined ? undefined : 'get' in d ? ReflectApply(d.get, globalThis, []) : d.value;
          if (value !== undefined) onBuilt(value);
        }
        return value;
      };
      if (d !== undefined && 'get' in d && d.configurable) {
        defineProperty(globalThis, name, {
          get: build,
          set(v) { defineProperty(globalThis, name, { value: v, writable: true, configurable: true, enumerable: d.enumerable }); },
          configurable: true, enumerable: d.enumerable,
        });
      } else {
        build();  // a plain value (or a getter we cannot move): taken now, as before
      }
      return build;
    }
    let headersForEach, headersHas, headersSet;
    const responseClass = lazyGlobal('Response', () => {});
    const requestClass = lazyGlobal('Request', () => {});
    const headersClass = lazyGlobal('Headers', (H) => {
      headersForEach = uncurry(H.prototype.forEach);
      headersHas = uncurry(H.prototype.has);
      headersSet = uncurry(H.prototype.set);
    });

    // --- Frames out -----------------------------------------------------------
    const writeFrame = (text) => io.writeBytes(text + '\n');
    // Bytes of `frame` on the wire (UTF-8, with the newline).
    const frameBytes = (frame) => io.utf8Length(frame) + 1;

    // Cuts `text` until `build(text)` fits in one frame; never splits a surrogate pair.
    function fitted(text, build) {
      let frame = build(text);
      while (frameBytes(frame) > maxFrameBytes && text.length > 0) {
        text = toWellFormed(stringSlice(text, 0, text.length >> 1));
        frame = build(text);
      }
      return frame;
    }

    // --- Modules (issue 17) ---------------------------------------------------
    // The load frame's `modules` ({SPECIFIER: {main, files: {PATH: TEXT}}},
    // sandbox/pool.h ToolCode) are the only code require() and import() can
    // reach: a declared specifier (or SPECIFIER/PATH), a relative path inside
    // the requesting module's own files, and the runtime modules of
    // kSafeBuiltins (with or without "node:"). Anything else — an undeclared
    // package, fs, child_process, a path outside the module — is refused
    // (code ERR_TASKYON_MODULE_REFUSED). Each file is evaluated once per
    // sandbox and kept: a retained sandbox's later calls reuse what is loaded.
    //
    // ES modules (.mjs, or .js under a package.json with "type": "module")
    // are vm.SourceTextModules (Node: --experimental-vm-modules, sandbox.h
    // node_argv; Deno 2's node:vm has them unflagged), linked by this loader
    // alone: each static import and each import() — from tool code, from an
    // ES module, from a CommonJS module — comes here (importModuleDynamically
    // of the code's compilation, which eval and Function inherit), never to
    // the runtime's own loader. A CommonJS file, a JSON file or a builtin in
    // an ES graph is a SyntheticModule: default = its exports, and its
    // exports' own keys as named exports.
    const kSafeBuiltins = ['assert', 'buffer', 'events', 'path', 'querystring', 'string_decoder', 'url', 'util'];
    const hasOwn = Object.hasOwn;
    const stringSplit = uncurry(String.prototype.split);
    const stringStartsWith = uncurry(String.prototype.startsWith);
    const stringEndsWith = uncurry(String.prototype.endsWith);
    const stringReplaceAll = uncurry(String.prototype.replaceAll);
    const arrayJoin = uncurry(Array.prototype.join);
    const arrayPop = uncurry(Array.prototype.pop);
    const arrayIncludes = uncurry(Array.prototype.includes);
    const isArray = Array.isArray;
    const objectKeys = Object.keys;
    const WeakMapCtor = WeakMap;
    const weakMapGet = uncurry(WeakMap.prototype.get);
    const weakMapSet = uncurry(WeakMap.prototype.set);
    const promiseThen = uncurry(Promise.prototype.then);
    function moduleRefused(request, why, what = 'require') {
      const e = new ErrorCtor(what + '(' + stringify(request) + ') is refused: ' + why);
      e.code = 'ERR_TASKYON_MODULE_REFUSED';
      return e;
    }
    // `request` relative to the directory `dir` ("" is the module's root), or null past the root.
    function joinPath(dir, request) {
      const parts = dir === '' ? [] : stringSplit(dir, '/');
      for (const part of stringSplit(request, '/')) {
        if (part === '' || part === '.') continue;
        if (part === '..') {
          if (parts.length === 0) return null;
          arrayPop(parts);
        } else {
          arrayPush(parts, part);
        }
      }
      return arrayJoin(parts, '/');
    }
    // As Node resolves a path in a package for require(): the module's root
    // is its main; PATH, PATH.js, PATH.cjs, PATH.json, PATH/index.js,
    // PATH/index.json; a request ending in "/" names a directory (only its
    // index). For import (`exact`), as Node's ES resolver: PATH itself only.
    function findFile(pkg, path, directory, exact) {
      if (path === '') return pkg.main;
      if (exact) return hasOwn(pkg.files, path) && !directory ? path : null;
      const candidates = directory ? [path + '/index.js', path + '/index.json']
        : [path, path + '.js', path + '.cjs', path + '.json', path + '/index.js', path + '/index.json'];
      for (const candidate of candidates) {
        if (hasOwn(pkg.files, candidate)) return candidate;
      }
      return null;
    }
    const namesDirectory = (request) => stringEndsWith(request, '/') || stringEndsWith(request, '/.') ||
      stringEndsWith(request, '/..') || request === '.' || request === '..';
    function dirOf(path) {
      const parts = stringSplit(path, '/');
      arrayPop(parts);
      return arrayJoin(parts, '/');
    }
    // A runtime module of kSafeBuiltins ("node:" or not), else undefined.
    function safeBuiltin(request) {
      const name = stringStartsWith(request, 'node:') ? stringSlice(request, 5) : request;
      return io.builtin !== null && arrayIncludes(kSafeBuiltins, name) ? io.builtin(name) : undefined;
    }
    // The safe list's name of `request` ("node:" or not), else null.
    function safeBuiltinName(request) {
      const name = stringStartsWith(request, 'node:') ? stringSlice(request, 5) : request;
      return arrayIncludes(kSafeBuiltins, name) ? name : null;
    }
    // process.getBuiltinModule of a revision with modules: the same safe list.
    function builtinGate(id) {
      const builtin = safeBuiltin(StringCtor(id));
      if (builtin !== undefined) return builtin;
      throw moduleRefused(StringCtor(id), (io.builtin !== null ? 'it gives only ' + arrayJoin(kSafeBuiltins, ', ')
        : 'this runtime gives none') + ' to a tool that declares modules', 'process.getBuiltinModule');
    }
    // A ".", ".." or "node_modules" segment (any case, percent-encoded or
    // not; "/" or "\\" between segments): Node's deprecatedInvalidSegmentRegEx,
    // which is what it refuses (an empty segment it only warns about, and
    // joinPath skips).
    const regExpExec = uncurry(RegExp.prototype.exec);
    const badSegment = /(^|\\|\/)((\.|%2e)(\.|%2e)?|(n|%6e|%4e)(o|%6f|%4f)(d|%64|%44)(e|%65|%45)(_|%5f)(m|%6d|%4d)(o|%6f|%4f)(d|%64|%44)(u|%75|%55)(l|%6c|%4c)(e|%65|%45)(s|%73|%53))(\\|\/|$)/i;
    // `exports` of a package.json ("exports"; Node's PACKAGE_EXPORTS_RESOLVE)
    // for `subpath` ("." or "./x") under `conditions`: the target path
    // ("./…", "*" replaced), or null when the package does not export it.
    // As Node: a target with such a segment after its "./" is an invalid
    // package target (ERR_INVALID_PACKAGE_TARGET; in an array of targets
    // the next is tried), and what a "*" matched with one is an invalid
    // specifier (ERR_INVALID_MODULE_SPECIFIER) — "pkg/star/../hidden.js"
    // never reaches a file the pattern does not export. `request` and
    // `specifier` name them in the errors.
    function exportsTarget(exports, subpath, conditions, request, specifier) {
      let map = exports;
      if (typeof exports !== 'object' || exports === null || isArray(exports) ||
          objectKeys(exports).length === 0 || !stringStartsWith(objectKeys(exports)[0], '.')) {
        map = { __proto__: null, '.': exports };
      }
      const invalid = (code, why) => {
        const e = new ErrorCtor('import(' + stringify(request) + ') is refused: ' + why + ' in the module ' + specifier +
          '\'s package.json "exports"');
        e.code = code;
        return e;
      };
      const target = (t, star, key) => {
        if (typeof t === 'string') {
          if (!stringStartsWith(t, './')) return null;
          if (regExpExec(badSegment, stringSlice(t, 2)) !== null) {
            throw invalid('ERR_INVALID_PACKAGE_TARGET', 'the target ' + stringify(t) + ' of ' + stringify(key) +
              ' is not a path inside the module');
          }
          if (star !== '' && regExpExec(badSegment, star) !== null) {
            throw invalid('ERR_INVALID_MODULE_SPECIFIER', stringify(star) + ' is not a valid match for the pattern ' +
              stringify(key));
          }
          return stringReplaceAll(t, '*', star);
        }
        if (isArray(t)) {
          let invalidTarget = null;
          for (const each of t) {
            let r;
            try {
              r = target(each, star, key);
            } catch (e) {
              if (e.code !== 'ERR_INVALID_PACKAGE_TARGET') throw e;
              invalidTarget = e;
              continue;
            }
            if (r !== null) return r;
          }
          if (invalidTarget !== null) throw invalidTarget;
          return null;
        }
        if (t !== null && typeof t === 'object') {
          for (const condition of objectKeys(t)) {
            if (condition === 'default' || arrayIncludes(conditions, condition)) {
              const r = target(t[condition], star, key);
              if (r !== null) return r;
            }
          }
        }
        return null;
      };
      if (hasOwn(map, subpath) && stringIndexOf(subpath, '*') === -1) return target(map[subpath], '', subpath);
      let bestKey = null, bestStar = '', bestPrefix = -1;
      for (const key of objectKeys(map)) {
        const star = stringIndexOf(key, '*');
        if (star === -1 || stringIndexOf(key, '*', star + 1) !== -1) continue;
        const prefix = stringSlice(key, 0, star), suffix = stringSlice(key, star + 1);
        if (!stringStartsWith(subpath, prefix) || subpath === prefix || !stringEndsWith(subpath, suffix) ||
            subpath.length < key.length - 1 || prefix.length <= bestPrefix) continue;
        bestKey = key;
        bestPrefix = prefix.length;
        bestStar = stringSlice(subpath, prefix.length, subpath.length - suffix.length);
      }
      return bestKey === null ? null : target(map[bestKey], bestStar, bestKey);
    }
    function moduleLoader(modules, esm) {
      const loaded = new MapCtor();   // CommonJS: SPECIFIER + '\0' + PATH -> the module object
      const records = new MapCtor();  // ES graphs: SPECIFIER + '\0' + PATH, or 'node:' + NAME -> a vm.Module
      const origins = new WeakMapCtor();  // vm.Module -> {specifier, pkg, dir}: where its imports resolve
      const jsonOf = new MapCtor();   // SPECIFIER + '\0' + PATH of a package.json -> its value, or null
      function packageJson(specifier, pkg, path) {
        const key = specifier + '\0' + path;
        let value = mapGet(jsonOf, key);
        if (value === undefined) {
          try { value = parse(pkg.files[path]); } catch { value = null; }
          if (value === null || typeof value !== 'object') value = null;
          mapSet(jsonOf, key, value);
        }
        return value;
      }
      // As Node: .mjs is an ES module, .cjs is not, and .js is one when the
      // nearest package.json (inside the module) says "type": "module".
      function isEsm(specifier, pkg, path) {
        if (stringEndsWith(path, '.mjs')) return true;
        if (!stringEndsWith(path, '.js')) return false;
        for (let dir = dirOf(path); ; dir = dirOf(dir)) {
          const candidate = dir === '' ? 'package.json' : dir + '/package.json';
          if (hasOwn(pkg.files, candidate)) {
            const json = packageJson(specifier, pkg, candidate);
            return json !== null && json.type === 'module';
          }
          if (dir === '') return false;
        }
      }
      function evaluate(specifier, pkg, path) {
        const key = specifier + '\0' + path;
        const known = mapGet(loaded, key);
        if (known !== undefined) return known.exports;
        if (isEsm(specifier, pkg, path)) {
          const e = new ErrorCtor('require() of the ES module ' + specifier + '/' + path + ': load it with import()');
          e.code = 'ERR_REQUIRE_ESM';
          throw e;
        }
        const module = { exports: {}, id: specifier + '/' + path, loaded: false };
        mapSet(loaded, key, module);
        const source = pkg.files[path];
        const from = { specifier, pkg, dir: dirOf(path) };
        try {
          if (stringEndsWith(path, '.json')) {
            module.exports = parse(source);
          } else {
            const fn = io.compileModule(source, specifier + '/' + path, esm === null ? null : (request) => importFrom(from, request));
            ReflectApply(fn, module.exports, [module.exports, requireFrom(from), module,
              '/modules/' + specifier + '/' + path, '/modules/' + specifier + '/' + dirOf(path)]);
          }
        } catch (e) {
          mapDelete(loaded, key);  // a module that threw is not loaded: a later require runs it again, as Node does
          throw e;
        }
        module.loaded = true;
        return module.exports;
      }
      // The file a declared module gives for `request` (SPECIFIER or
      // SPECIFIER/REST). require(): its main, or REST as findFile resolves it;
      // import: its package.json "exports" under io.esmConditions when it has
      // them, else its main or REST exactly.
      function packageFile(specifier, request, kind) {
        const pkg = modules[specifier];
        const rest = request === specifier ? '' : stringSlice(request, specifier.length + 1);
        if (kind === 'import' && hasOwn(pkg.files, 'package.json')) {
          const json = packageJson(specifier, pkg, 'package.json');
          if (json !== null && json.exports !== undefined && json.exports !== null) {
            const target = exportsTarget(json.exports, rest === '' ? '.' : './' + rest, io.esmConditions, request, specifier);
            const path = target === null ? null : joinPath('', target);
            if (target === null) {
              throw moduleRefused(request, 'the module ' + specifier + ' does not export ' +
                stringify(rest === '' ? '.' : './' + rest) + ' (its package.json "exports")', kind);
            }
            if (path === null || !hasOwn(pkg.files, path)) {
              throw moduleRefused(request, 'the module ' + specifier + '\'s "exports" names ' + stringify(target) +
                ', which it does not hold', kind);
            }
            return path;
          }
        }
        const path = joinPath('', rest);
        const file = path === null ? null : findFile(pkg, path, rest !== '' && namesDirectory(request), kind === 'import');
        if (file === null) throw moduleRefused(request, 'the module ' + specifier + ' has no such file', kind);
        return file;
      }
      // [specifier, pkg, file] of a request from `from` (null: tool code), or
      // a builtin as [null, NAME]. `kind`: 'require' or 'import'.
      function resolve(from, request, kind) {
        if (typeof request !== 'string') throw new TypeErrorCtor(kind + '() takes a module name');
        const relative = request === '.' || request === '..' || stringStartsWith(request, './') || stringStartsWith(request, '../');
        if (relative) {
          if (from === null) throw moduleRefused(request, 'tool code has no files of its own to ' + kind, kind);
          const path = joinPath(from.dir, request);
          const file = path === null ? null : findFile(from.pkg, path, namesDirectory(request), kind === 'import');
          if (file === null) {
            throw moduleRefused(request, 'no such file in the module ' + from.specifier +
              (kind === 'import' ? ' (an import names its file exactly, as Node\'s ES module resolution does)' : ''), kind);
          }
          return [from.specifier, from.pkg, file];
        }
        if (hasOwn(modules, request)) return [request, modules[request], packageFile(request, request, kind)];
        for (const specifier of objectKeys(modules)) {
          if (stringStartsWith(request, specifier + '/')) return [specifier, modules[specifier], packageFile(specifier, request, kind)];
        }
        const name = safeBuiltinName(request);
        if (name !== null && (kind === 'import' ? esm !== null : io.builtin !== null)) return [null, name];
        throw moduleRefused(request, 'only the modules the tool declares (' + (arrayJoin(objectKeys(modules), ', ') || 'none') +
          ')' + ((kind === 'import' ? esm !== null : io.builtin !== null) ? ' and ' + arrayJoin(kSafeBuiltins, ', ') : '') +
          ' can be ' + (kind === 'import' ? 'imported' : 'required'), kind);
      }
      function requireFrom(from) {
        const require = function require(request) {
          const found = resolve(from, request, 'require');
          return found[0] === null ? io.builtin(found[1]) : evaluate(found[0], found[1], found[2]);
        };
        // require.resolve: the path a module has inside the sandbox (its __filename).
        require.resolve = function resolveRequest(request) {
          const found = resolve(from, request, 'require');
          return found[0] === null ? StringCtor(request) : '/modules/' + found[0] + '/' + found[2];
        };
        return require;
      }

      // --- ES graphs (esm: {SourceTextModule, SyntheticModule}, or null) ----
      // A SyntheticModule whose default export is `value` and whose named
      // exports are its own enumerable keys (a namespace's, a CommonJS
      // module's exports), read now.
      function synthetic(value, identifier) {
        const names = ['default'];
        const isObject = value !== null && (typeof value === 'object' || typeof value === 'function');
        if (isObject) for (const key of objectKeys(value)) if (key !== 'default') arrayPush(names, key);
        return new esm.SyntheticModule(names, function setExports() {
          this.setExport('default', value);
          for (let i = 1; i < names.length; i++) this.setExport(names[i], value[names[i]]);
        }, { identifier });
      }
      // The vm.Module of a resolved request, made once.
      async function recordOf(found) {
        if (found[0] === null) {
          const key = 'node:' + found[1];
          let record = mapGet(records, key);
          if (record === undefined) {
            const builtin = await io.importBuiltin(found[1]);
            record = mapGet(records, key);  // made while we waited
            if (record === undefined) {
              record = synthetic(builtin, key);
              mapSet(records, key, record);
            }
          }
          return record;
        }
        const [specifier, pkg, path] = found;
        const key = specifier + '\0' + path;
        let record = mapGet(records, key);
        if (record !== undefined) return record;
        const identifier = 'module:' + specifier + '/' + path;
        if (isEsm(specifier, pkg, path)) {
          const from = { specifier, pkg, dir: dirOf(path) };
          const url = 'file:///modules/' + specifier + '/' + path;
          record = new esm.SourceTextModule(pkg.files[path], {
            identifier,
            importModuleDynamically: (request) => importFrom(from, request),
            initializeImportMeta: (meta) => { meta.url = url; },
          });
          weakMapSet(origins, record, from);
        } else {
          // CommonJS (or JSON) runs now, as the graph is linked: its exports' keys are its named exports.
          record = synthetic(evaluate(specifier, pkg, path), identifier);
        }
        mapSet(records, key, record);
        return record;
      }
      const linker = (request, referencing) => {
        const from = weakMapGet(origins, referencing);
        return recordOf(resolve(from === undefined ? null : from, request, 'import'));
      };
      // One link at a time (a graph being linked is not linked again by a
      // concurrent import()); evaluation is the runtime's, once per module: an
      // ES module that threw stays errored, as ES modules do.
      // The vm.Module itself is what import() gets (the runtime takes its
      // namespace): a namespace with a `then` export would be unwrapped as a
      // thenable if an async function returned it.
      let linking = PromiseCtor.resolve();
      let evaluating = PromiseCtor.resolve();  // the last evaluation begun here
      const evaluations = new WeakMapCtor();   // vm.Module -> its evaluation begun here
      async function importFrom(from, request) {
        if (esm === null) throw moduleRefused(StringCtor(request), 'this runtime has no ES module support here', 'import');
        const record = await recordOf(resolve(from, request, 'import'));
        if (record.status === 'unlinked') {
          const done = promiseThen(linking, () => record.status === 'unlinked' ? record.link(linker) : undefined);
          linking = promiseThen(done, () => {}, () => {});
          await done;
        }
        let evaluation = weakMapGet(evaluations, record);
        if (evaluation === undefined && record.status === 'evaluating') {
          await evaluating;  // part of a graph whose evaluation is under way (top-level await)
        } else if (evaluation === undefined) {
          evaluation = record.evaluate();  // an evaluated module: nothing; an errored one: its error again
          weakMapSet(evaluations, record, evaluation);
          evaluating = promiseThen(evaluation, () => {}, () => {});
        }
        if (evaluation !== undefined) await evaluation;
        if (record.status === 'errored') throw record.error;
        return record;
      }
      return { require: requireFrom(null), importFrom: (request) => importFrom(null, request) };
    }

    // --- The current call -------------------------------------------------------
    let tool = null;        // the loaded function
    let loading = false;    // a load frame arrived; loading is in progress or done
    let current = null;     // the call in progress: {id, waiting, controller, ended}, or null
                            // (waiting: a Map req -> waiter, made with the call's first request)
    let logBytes = 0;       // log text sent for the current call, bytes
    let nextReq = 1;        // request numbers count 1, 2, 3, ... over the sandbox's life (the host checks)
    let pipelined = null;   // {id, args}: a call frame that came while the code was loading

    // Sends one log frame for the current call. Logs outside a call are dropped.
    // Once more than maxLogBytes were sent, the rest of the call's logs are
    // dropped; the host truncates at exactly maxLogBytes and flags it.
    function emitLog(level, text) {
      if (current === null || logBytes > maxLogBytes) return;
      text = toWellFormed(StringCtor(text));
      const room = maxLogBytes - logBytes + 1;
      if (text.length > room) text = toWellFormed(stringSlice(text, 0, room));
      const id = current.id;
      const frame = fitted(text, (t) =>
        '{"type":"log","id":' + id + ',"level":"' + level + '","text":' + stringify(t) + '}');
      logBytes += io.utf8Length(text);
      writeFrame(frame);
    }

    // Sends one progress frame for `call` (context.progress(value, total?,
    // message?)): value and total finite numbers (total optional), message a
    // string cut to 1024 UTF-16 units. Refused outside its call (the call
    // ended) or past maxProgressFrames per call: dropped, never an error, so a
    // chatty tool cannot fill the host's pipe.
    const maxProgressFrames = 1000;
    let progressFrames = 0;
    function emitProgress(call, value, total, message) {
      if (current !== call || call.ended || progressFrames >= maxProgressFrames) return;
      const v = NumberCtor(value);
      if (!isFiniteNumber(v)) throw new TypeErrorCtor('context.progress: the value must be a finite number');
      let t = null;
      if (total !== undefined && total !== null) {
        t = NumberCtor(total);
        if (!isFiniteNumber(t)) throw new TypeErrorCtor('context.progress: the total must be a finite number');
      }
      let m = message === undefined || message === null ? '' : toWellFormed(StringCtor(message));
      if (m.length > 1024) m = toWellFormed(stringSlice(m, 0, 1024));
      progressFrames += 1;
      writeFrame('{"type":"progress","id":' + call.id + ',"progress":' + stringify(v) + ',"total":' + stringify(t) +
        ',"message":' + stringify(m) + '}');
    }

    // --- Serializing values -------------------------------------------------------
    // True when JSON.stringify output `text` holds a lone surrogate: it writes
    // one as the escape \udXXX (lower-case hex, first digit 8-f), and writes
    // every other character outside U+0000-U+001F as itself, so such an
    // escape whose backslash is not itself escaped is one.
    function hasLoneSurrogate(text) {
      for (let i = stringIndexOf(text, '\\ud'); i !== -1; i = stringIndexOf(text, '\\ud', i + 1)) {
        let k = i;
        while (k > 0 && charCodeAt(text, k - 1) === 0x5c) k--;
        const c = charCodeAt(text, i + 3);
        if (((i - k) & 1) === 0 && ((c >= 0x38 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return true;
      }
      return false;
    }

    // JSON.stringify that refuses lone surrogates (TypeError): JSON.stringify
    // would escape them, and the host (strict UTF-8) must not receive a value
    // it cannot represent. One native stringify and a scan of its output, no
    // replacer (issue 19: a replacer is a JS call per member and value).
    function strictStringify(value) {
      const text = stringify(value);
      if (text !== undefined && hasLoneSurrogate(text)) throw new TypeErrorCtor('a string or member name holds a lone surrogate');
      return text;
    }

    // Deepest nesting of arrays/objects in JSON text.
    function depthOf(text) {
      let depth = 0, deepest = 0, inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = charCodeAt(text, i);
        if (inString) {
          if (c === 0x5c) i++;               // backslash: skip the escaped char
          else if (c === 0x22) inString = false;
        } else if (c === 0x22) inString = true;
        else if (c === 0x5b || c === 0x7b) { if (++depth > deepest) deepest = depth; }
        else if (c === 0x5d || c === 0x7d) depth--;
      }
      return deepest;
    }

    // The whole frame for a call's outcome; a value that cannot be sent becomes
    // an error frame. A result larger than one frame is sent as it is: the host
    // refuses the line and destroys the sandbox (issue 12: a result over the
    // frame limit is a boundary failure, never a kept sandbox holding it).
    function resultFrame(id, value) {
      let text;
      try {
        text = strictStringify(value);
      } catch (e) {
        return errorFrame(id, { name: 'TypeError', message: 'the result is not JSON-serializable: ' + describe(e).message });
      }
      if (text === undefined) text = 'null';  // undefined, functions, symbols
      // Nesting deeper than maxDepth takes more than 2 * maxDepth characters.
      if (text.length > 2 * maxDepth && depthOf(text) > maxDepth) {
        return errorFrame(id, { name: 'RangeError', message: 'the result nests deeper than ' + maxDepth + ' levels' });
      }
      return '{"type":"result","id":' + id + ',"value":' + text + '}';
    }

    function errorFrame(id, { name, message }) {
      name = toWellFormed(StringCtor(name));
      if (name.length > 200) name = toWellFormed(stringSlice(name, 0, 200));
      return fitted(toWellFormed(StringCtor(message)), (m) =>
        '{"type":"error","id":' + id + ',"name":' + stringify(name) + ',"message":' + stringify(m) + '}');
    }

    // {name, message} of a thrown value. Error-like objects keep their name (with
    // a string `code` when there is one); anything else is stringified.
    function describe(thrown) {
      try {
        if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function') && 'message' in thrown) {
          let name = typeof thrown.name === 'string' ? thrown.name : 'Error';
          if (typeof thrown.code === 'string') name += ' [' + thrown.code + ']';
          return { name, message: StringCtor(thrown.message) };
        }
        if (typeof thrown === 'string') return { name: 'Error', message: thrown };
        let text;
        try { text = stringify(thrown); } catch { /* BigInt, cycles */ }
        return { name: 'Error', message: text === undefined ? StringCtor(thrown) : text };
      } catch {
        return { name: 'Error', message: 'a value was thrown that cannot be described' };
      }
    }

    // --- Capabilities: the only doors out (DESIGN section 6) ----------------------
    // Each request is one "cap" frame naming its call; the host answers with
    // "cap_result" or "cap_error" while it keeps reading our frames, so an
    // "abort" frame (the tool's AbortSignal fired) reaches it during the
    // request. Every call has its own context (S2): a request made through the
    // context of a call that has ended (saved, or from a timer) is refused
    // here, without a frame, and the host refuses a forged one too.
    function capabilityError(code, message) {
      const e = new ErrorCtor(message);
      defineProperty(e, 'name', { value: 'CapabilityError', configurable: true, writable: true });
      defineProperty(e, 'code', { value: code, configurable: true, writable: true, enumerable: true });
      return e;
    }

    // One request of `call`; `signal` (optional) aborts it.
    function request(call, op, args, signal) {
      if (call !== current || call.ended) {
        return PromiseCtor.reject(capabilityError('denied', op + ' refused: this context belongs to call ' + call.id +
          ', which has ended (each call gets its own context)'));
      }
      if (signal !== undefined && signalAborted(signal)) return PromiseCtor.reject(signalReason(signal));
      let text;
      try {
        text = strictStringify(args);
      } catch (e) {
        return PromiseCtor.reject(capabilityError('invalid_request', 'the ' + op + ' request is not JSON-serializable: ' + describe(e).message));
      }
      const req = nextReq;
      const frame = '{"type":"cap","id":' + call.id + ',"req":' + req + ',"op":' + stringify(op) + ',"args":' + text + '}';
      if (frameBytes(frame) > maxFrameBytes) {
        return PromiseCtor.reject(capabilityError('too_large', 'the ' + op + ' request exceeds ' + maxFrameBytes + ' bytes'));
      }
      nextReq++;
      return new PromiseCtor((resolve, reject) => {
        let onAbort = null;
        const settle = () => { if (onAbort !== null) removeEventListener(signal, 'abort', onAbort); };
        if (call.waiting === null) call.waiting = new MapCtor();
        mapSet(call.waiting, req, {
          resolve: (value) => { settle(); resolve(value); },
          reject: (error) => { settle(); reject(error); },
        });
        if (signal !== undefined) {
          onAbort = () => {
            if (call.waiting === null || mapGet(call.waiting, req) === undefined) return;
            mapDelete(call.waiting, req);
            if (call === current && !call.ended) writeFrame('{"type":"abort","id":' + call.id + ',"req":' + req + '}');
            reject(signalReason(signal));
          };
          addEventListener(signal, 'abort', onAbort);
        }
        writeFrame(frame);
      });
    }

    // A reply for a request nobody waits for any more (aborted by its signal,
    // or its call ended) is dropped.
    function onReply(frame) {
      if (current === null || current.waiting === null) return;
      const waiter = mapGet(current.waiting, frame.req);
      if (waiter === undefined) return;
      mapDelete(current.waiting, frame.req);
      if (frame.type === 'cap_result') waiter.resolve(frame.value);
      else waiter.reject(capabilityError(StringCtor(frame.code), StringCtor(frame.message)));
    }

    // The request body as bytes (or null), with the content type it implies.
    async function bodyBytes(body) {
      if (body === undefined || body === null) return { bytes: null, type: null };
      if (typeof body === 'string') return { bytes: io.bytesOfText(body), type: 'text/plain;charset=UTF-8' };
      if (body instanceof URLSearchParamsCtor) {
        return { bytes: io.bytesOfText(StringCtor(body)), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
      }
      if (body instanceof ArrayBufferCtor) return { bytes: new Uint8ArrayCtor(body), type: null };
      if (isArrayBufferView(body)) return { bytes: new Uint8ArrayCtor(body.buffer, body.byteOffset, body.byteLength), type: null };
      if (body instanceof BlobCtor) return { bytes: new Uint8ArrayCtor(await blobArrayBuffer(body)), type: body.type || null };
      throw new TypeErrorCtor('fetch: this body type is not supported here (use a string, bytes, Blob or URLSearchParams)');
    }

    // A fetch bound to `call`. The host decides everything (policy, grant,
    // limits); this only carries the request. The signal aborts the request in
    // the host too (an "abort" frame).
    async function fetchFor(call, input, init) {
      init = init === undefined || init === null ? {} : init;
      const RequestCtor = requestClass(), HeadersCtor = headersClass(), ResponseCtor = responseClass();
      const isRequest = input instanceof RequestCtor;
      const url = isRequest ? input.url : input instanceof URLCtor ? input.href : StringCtor(input);
      const method = init.method !== undefined ? StringCtor(init.method) : isRequest ? input.method : 'GET';
      const headers = new HeadersCtor(init.headers !== undefined ? init.headers : isRequest ? input.headers : undefined);
      let body = init.body;
      if (body === undefined && isRequest && input.body !== null) body = new Uint8ArrayCtor(await input.arrayBuffer());
      let signal = init.signal !== undefined && init.signal !== null ? init.signal : isRequest ? input.signal : undefined;
      if (signal !== undefined && signal !== null && !isAbortSignal(signal)) {
        throw new TypeErrorCtor('fetch: init.signal must be an AbortSignal');
      }
      if (signal === null) signal = undefined;
      if (signal !== undefined && signalAborted(signal)) throw signalReason(signal);
      const { bytes, type } = await bodyBytes(body);
      if (type !== null && !headersHas(headers, 'content-type')) headersSet(headers, 'content-type', type);
      const list = [];
      headersForEach(headers, (value, name) => { arrayPush(list, [name, value]); });
      const reply = await request(call, 'fetch', { url, method, headers: list, body: bytes === null ? null : io.toBase64(bytes) }, signal);
      const nullBody = reply.status === 204 || reply.status === 205 || reply.status === 304 || method === 'HEAD';
      const response = new ResponseCtor(nullBody ? null : io.fromBase64(reply.body), {
        status: reply.status, statusText: reply.statusText, headers: reply.headers,
      });
      defineProperty(response, 'url', { value: reply.url, configurable: true });
      return response;
    }

    // Outside a call (before the first one) the global fetch is refused.
    const idleFetch = () => PromiseCtor.reject(capabilityError('denied', 'fetch can be used only while the tool is being called'));

    // The call's AbortSignal, made on first use (issue 19: making one and
    // aborting it at every call's end was half of the harness's work in a
    // warm call that never looks at it). Asked for after the call ended (a
    // saved context), it is already aborted, as it would have been.
    function signalOf(call) {
      if (call.controller === null) {
        call.controller = new AbortControllerCtor();
        if (call.ended) abortCall(call);
      }
      return controllerSignal(call.controller);
    }

    function abortCall(call) {
      try {
        abortControllerAbort(call.controller, capabilityError('cancelled', 'call ' + call.id + ' has ended'));
      } catch { /* a listener threw: it was the tool's */ }
    }

    // A fresh, frozen context for one call: every capability in it is bound to
    // that call and refused once it has ended; `signal` aborts when it ends.
    // `signal` and `storage` are own, enumerable getters, each one shared
    // function that finds its call in a private field stamped on the context
    // (issue 19: an object literal's getter is a new closure, hence a new
    // hidden class, per call — three quarters of the harness's work in a warm
    // call). Nothing but the harness can read the field. `storage` is made
    // when first read, then the same frozen object: most calls never use it,
    // and its four functions were a fifth of the garbage a warm call left.
    class Stamp { constructor(object) { return object; } }
    class CallOf extends Stamp {
      #call;
      constructor(object, call) { super(object); this.#call = call; }
      static of(object) { return object.#call; }
    }
    const callOf = CallOf.of;
    const signalProperty = freeze({
      get: function signal() { return signalOf(callOf(this)); },
      enumerable: true, configurable: true,
    });
    function storageOf(call) {
      if (call.storage === null) {
        const req = (op, args) => request(call, op, args, undefined);
        call.storage = freeze({
          get: (key) => req('storage.get', { key: StringCtor(key) }),
          set: (key, value) => req('storage.set', { key: StringCtor(key), value: value === undefined ? null : value }),
          delete: (key) => req('storage.delete', { key: StringCtor(key) }),
          list: (prefix) => req('storage.list', { prefix: prefix === undefined ? '' : StringCtor(prefix) }),
        });
      }
      return call.storage;
    }
    const storageProperty = freeze({
      get: function storage() { return storageOf(callOf(this)); },
      enumerable: true, configurable: true,
    });
    function contextFor(call) {
      const context = {
        fetch: function fetch(input, init) { return fetchFor(call, input, init); },
        progress: (value, total, message) => emitProgress(call, value, total, message),
        createSubtasksResult: (drafts) => request(call, 'createSubtasksResult', { drafts }, undefined),
        resolveInvocation: (name) => request(call, 'resolveInvocation', { name: StringCtor(name) }, undefined),
      };
      new CallOf(context, call);  // stamps the private field on `context`
      defineProperty(context, 'signal', signalProperty);
      defineProperty(context, 'storage', storageProperty);
      return freeze(context);
    }

    // Ends `call`: its context refuses from now on, its pending requests are
    // dropped (they never settle, as before: rejecting them would make an
    // unawaited request an unhandled rejection that ends the runtime), and
    // its signal aborts, which is how tool code learns the call was stopped.
    function endCall(call) {
      call.ended = true;
      call.waiting = null;
      if (call.controller !== null) abortCall(call);
    }

    // --- Host frames in -------------------------------------------------------
    function sendLoadError(message) {
      writeFrame(fitted(toWellFormed(message), (m) => '{"type":"load_error","message":' + stringify(m) + '}'));
    }

    // import() of code the harness's own frames made (importFromHarness):
    // what tool code's own import() is, once the tool's modules are known.
    let toolImport = null;
    function importFromHarness(specifier) {
      if (toolImport !== null) return toolImport(specifier);
      return PromiseCtor.reject(moduleRefused(StringCtor(specifier), loading
        ? 'the tool declares no modules, so import() reaches nothing' : 'no tool is loaded', 'import'));
    }

    async function load(code, modules) {
      let fn;
      try {
        let importDynamic = null;
        if (modules !== undefined) {
          const loader = moduleLoader(modules, await io.esm());
          io.setRequire(loader.require, builtinGate);
          importDynamic = loader.importFrom;
          toolImport = importDynamic;
        }
        fn = await io.loadTool(code, importDynamic);
      } catch (e) {
        const { name, message } = describe(e);
        return sendLoadError(name + ': ' + message);
      }
      if (typeof fn !== 'function') {
        return sendLoadError('the tool code must be a function expression, not ' + (fn === null ? 'null' : typeof fn));
      }
      tool = fn;
      writeFrame('{"type":"ready"}');
      if (pipelined !== null) {
        const { id, args } = pipelined;
        pipelined = null;
        runCall(id, args);
      }
    }

    async function runCall(id, args) {
      // waiting: request(); controller: signalOf(); storage: storageOf()
      const call = { id, waiting: null, controller: null, ended: false, storage: null };
      current = call;
      logBytes = 0;
      progressFrames = 0;
      const context = contextFor(call);
      // M2: during the call the global fetch is this call's context.fetch (one
      // function object); a saved one of an ended call stays bound to its call.
      defineProperty(globalThis, 'fetch', { value: context.fetch, configurable: true, enumerable: true, writable: true });
      let frame;
      try {
        const value = await ReflectApply(tool, undefined, [args, context]);
        frame = resultFrame(id, value);  // toJSON and getters still log into this call
      } catch (e) {
        frame = errorFrame(id, describe(e));
      }
      current = null;
      writeFrame(frame);
      endCall(call);
    }

    function onLine(line) {
      let frame;
      try { frame = parse(line); } catch { io.fatal(65, 'malformed host frame'); }
      onFrame(frame);
    }

    function onFrame(frame) {
      if (frame === null || typeof frame !== 'object') io.fatal(65, 'malformed host frame');
      if (frame.type === 'load' && typeof frame.code === 'string' && !loading &&
          (frame.modules === undefined || (frame.modules !== null && typeof frame.modules === 'object'))) {
        loading = true;
        load(frame.code, frame.modules);
        return;
      }
      if ((frame.type === 'cap_result' || frame.type === 'cap_error') && typeof frame.req === 'number') {
        return onReply(frame);
      }
      if (frame.type === 'call' && current === null && pipelined === null &&
          typeof frame.id === 'number' && frame.id > 0 && frame.id % 1 === 0 && 'args' in frame) {
        if (tool !== null) {
          runCall(frame.id, frame.args);
          return;
        }
        if (loading) {  // the first call, sent right behind the load frame: it runs once loaded
          pipelined = { id: frame.id, args: frame.args };
          return;
        }
      }
      io.fatal(65, 'unexpected host frame');
    }

    defineProperty(globalThis, 'fetch', { value: idleFetch, configurable: true, enumerable: true, writable: true });
    // Runs the call path's functions once on a call that never starts (no
    // frame is written, nothing of it is kept), so that the runtime compiles
    // them while a pre-started sandbox waits instead of during its first call
    // (issue 19). Only before a load frame came; false (and nothing done) after.
    function warmUp() {
      if (loading) return false;
      const call = { id: 0, waiting: null, controller: null, ended: true, storage: null };
      contextFor(call);
      resultFrame(0, { warm: [1, 'up'] });
      errorFrame(0, describe(new ErrorCtor('warm')));
      endCall(call);
      onLine('{"type":"cap_result","req":0,"value":null}');  // no call runs: dropped
      return true;
    }

    return { emitLog, onLine, onFrame, describe, warmUp, importFromHarness };
  }
