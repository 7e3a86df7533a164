/// Turns a ``SourceDocument`` into a ``Container``: recognises the format, runs its front end, then
/// builds the indexes every format shares (rules by event name, tag firing order, macros by name).
package enum ContainerCompiler {
    static func compile(_ document: SourceDocument, options: LoadOptions) throws(ContainerError) -> Container {
        let file = document.file
        guard case .object(let root) = document.value else {
            var message = "top level is \(article(document.value.typeName)), not an object"
            if case .array(let items) = document.value, items.first?.objectValue != nil {
                // `copy(JSON.stringify(dataLayer))`, given where a container was expected.
                message +=
                    "; an array of objects is a data-layer dump (pushes to run a container over), not a container"
            }
            throw error(.unknownFormat, message, document)
        }
        var builder: CompilerOutput
        let format: ContainerFormat
        do throws(CompileFailure) {
            if let refusal = refusal(root) { throw refusal }
            if let resource = root["resource"] {
                format = .compiledResource
                builder = try ResourceCompiler.compile(resource, pointer: "/resource")
                builder.containerID = blobContainerID(root)
            } else if root["containerVersion"] != nil {
                format = .export
                builder = try ExportCompiler.compile(root)
            } else if root["exportFormatVersion"] != nil {
                throw CompileFailure(.unknownFormat, "export has no 'containerVersion'", pointer: "")
            } else if let flat = FlatValuesCompiler.compile(root) {
                format = .flatValues
                builder = flat
            } else {
                throw CompileFailure(
                    .unknownFormat,
                    "not a container: expected 'resource' (compiled container), 'containerVersion' (GTM export) "
                        + "or a flat map of values",
                    pointer: ""
                )
            }
        } catch let failure {
            throw error(failure.code, failure.message, document, pointer: failure.pointer)
        }
        let id =
            options.containerID ?? file.flatMap(ContainerLoader.containerID(fromFileName:)) ?? builder.containerID
            ?? document.scriptContainerID ?? file.flatMap(containerID(embeddedIn:)) ?? "GTM-UNKNOWN"
        let platform = options.platform ?? detectPlatform(root, format: format, document: document, builder.program)
        builder.program.undefinedComparesAsText = platform.comparesUndefinedAsText
        if platform == .mobile {
            builder.program.firebaseEventNames =
                TemplateCatalog.firebaseEventNames(inRuntime: root["runtime"]) ?? TemplateCatalog.firebaseEventNames
        }
        finishIndexes(&builder.program)
        return Container(
            id: id,
            version: builder.version ?? "0",
            format: format,
            platform: platform,
            file: file,
            unsupported: builder.unsupportedSummary(file: file),
            program: builder.program
        )
    }

    /// The `usageContext` of an export's container, upper-cased (`WEB`, `AMP`, `SERVER`, `ANDROID_SDK_5`, …).
    static func usageContexts(_ root: ValueMap) -> [String] {
        guard case .object(let version)? = root["containerVersion"],
            case .object(let container)? = version["container"],
            case .array(let contexts)? = container["usageContext"]
        else { return [] }
        return contexts.compactMap { $0.stringValue?.uppercased() }
    }

    /// Container formats that are recognised by name and refused, with what to do instead: GTM's 2014
    /// export (format 1.x), server-side and AMP containers, and AMP analytics configurations.
    static func refusal(_ root: ValueMap) -> CompileFailure? {
        let contexts = usageContexts(root)
        if root["containerVersion"] != nil, contexts.contains("AMP"), !contexts.contains("WEB") {
            return CompileFailure(
                .unknownFormat,
                "this is an AMP (usageContext 'AMP') container export: its triggers and tags run in the "
                    + "amp-analytics component of an AMP page, which has no data layer, so ContainerKit cannot run it; "
                    + "export the site's web container instead",
                pointer: "/containerVersion/container/usageContext"
            )
        }
        if root["containerVersion"] != nil {
            let isServer =
                contexts.contains("SERVER")
                || (contexts.isEmpty && root["containerVersion"]?.objectValue?["client"] != nil)
            guard isServer else { return nil }
            return CompileFailure(
                .unknownFormat,
                "this is a server-side (usageContext 'SERVER') container export: its clients and tags run on a "
                    + "tagging server for incoming http requests, not on a data layer, so ContainerKit cannot run it; "
                    + "export the web or mobile (Android, iOS) container that sends to it instead",
                pointer: contexts.isEmpty ? "/containerVersion/client" : "/containerVersion/container/usageContext"
            )
        }
        guard root["resource"] == nil else { return nil }
        let legacyVersion = root["exportFormatVersion"].flatMap { $0.jsNumber }.map { $0 < 2 } ?? false
        let holders = [root] + (root["container"]?.objectValue.map { [$0] } ?? [])
        let legacyShape = holders.contains { map in
            func isList(_ key: String) -> Bool { map[key]?.arrayValue != nil }
            return (isList("tags") || isList("tag")) && (isList("macros") || isList("conditions") || isList("rules"))
        }
        if legacyVersion || legacyShape {
            let version = root["exportFormatVersion"].map { " \($0.jsString)" } ?? " 1.x"
            return CompileFailure(
                .unknownFormat,
                "this is a GTM export of format\(version) (the 2014 editor: top-level 'macros', 'tags' and "
                    + "'rules'/'conditions'), which ContainerKit does not read; import it into a container in "
                    + "today's GTM UI, which converts it, and export that container again (exportFormatVersion 2), "
                    + "or use the compiled container file the app ships",
                pointer: root["exportFormatVersion"] != nil ? "/exportFormatVersion" : ""
            )
        }
        if root["requests"] != nil, root["triggers"] != nil || root["vars"] != nil {
            return CompileFailure(
                .unknownFormat,
                "this is an AMP analytics configuration ('vars', 'requests', 'triggers'): AMP containers run "
                    + "in the amp-analytics component of an AMP page, not on a data layer, so ContainerKit cannot "
                    + "run it; use the web or mobile container instead",
                pointer: "/requests"
            )
        }
        return nil
    }

    /// Template codes only web containers use (a compiled resource without a `fingerprint` is decided by them).
    static let webOnlyCodes: Set<String> = [
        "__u", "__jsm", "__html", "__aev", "__d", "__k", "__f", "__j", "__cl", "__lcl", "__evl", "__sdl", "__hl",
        "__fsl", "__tl", "__jel", "__googtag", "__gaawe", "__gaawc", "__sp", "__awec", "__dbg", "__gclidw", "__opt",
        "__ctv_web", "__vis", "__uv", "__hid",
    ]
    /// Template codes only mobile containers use.
    static let mobileOnlyCodes: Set<String> = [
        "__funct", "__funcm", "__md", "__fm", "__fup", "__ai", "__an", "__av", "__avn", "__ov", "__sv", "__dn",
        "__rs", "__ate", "__aid", "_func",
    ]

    /// The platform a container was built for: an export's `usageContext`; for a compiled resource, a
    /// `fingerprint` (v5 mobile files have one) or the gtm.js script form; else the template codes it uses.
    static func detectPlatform(
        _ root: ValueMap,
        format: ContainerFormat,
        document: SourceDocument,
        _ program: Program
    ) -> ContainerPlatform {
        switch format {
        case .flatValues:
            return .mobile
        case .export:
            if case .object(let version)? = root["containerVersion"],
                case .object(let container)? = version["container"],
                case .array(let contexts)? = container["usageContext"]
            {
                let names = contexts.compactMap { $0.stringValue?.uppercased() }
                if names.contains(where: { $0 == "WEB" || $0 == "AMP" }) { return .web }
                if names.contains(where: { $0.hasPrefix("ANDROID") || $0.hasPrefix("IOS") }) { return .mobile }
            }
        case .compiledResource:
            if root["fingerprint"] != nil { return .mobile }
            if document.isScript || root["permissions"] != nil || root["security_groups"] != nil { return .web }
        }
        var web = false
        for function in program.macros.map(\.function) + program.tags.map(\.function) {
            if mobileOnlyCodes.contains(function) { return .mobile }
            if webOnlyCodes.contains(function) { web = true }
        }
        return web ? .web : .mobile
    }

    /// The container ID in a served script's data blob: `data.blob["5"]`, what the runtime of 2025 and later
    /// scripts reads as its own id (`ctid: Oi(5, "GTM-…")`, `Oi` reading `data.blob[5]` with the literal as
    /// fallback).
    package static func blobContainerID(_ root: ValueMap) -> String? {
        guard case .object(let blob)? = root["blob"], case .string(let id)? = blob["5"],
            ContainerLoader.isContainerID(id)
        else { return nil }
        return id
    }

    /// A `GTM-XXXX` token anywhere in a file name: `vendor__app__GTM-5HM9ZRX.json`,
    /// `com.example.app__GTM-ABC123.json`, `my.app.GTM-ABC123.json`, `GTM-WDF9SGJ_v6.json.js`.
    ///
    /// The token is `GTM-` and the upper-case letters and digits after it, not followed by a lower-case letter;
    /// the last valid token wins (`…GTM-v5-Tagging-Example__GTM-MZTK5QP.json` names `GTM-MZTK5QP`;
    /// `…__GTM-Android_Examples.json` names none).
    package static func containerID(embeddedIn path: String) -> String? {
        let name = Array((path.split(separator: "/").last.map(String.init) ?? path).utf8)
        var found: String?
        var i = 0
        while i + 4 < name.count {
            // The token must start a word too: `wGTM-TAG-…` is no container id.
            guard name[i] == 0x47, name[i + 1] == 0x54, name[i + 2] == 0x4D, name[i + 3] == 0x2D,
                i == 0 || !(0x61...0x7A).contains(name[i - 1])
            else {
                i += 1
                continue
            }
            var end = i + 4
            while end < name.count, (0x30...0x39).contains(name[end]) || (0x41...0x5A).contains(name[end]) { end += 1 }
            // The token must end the word: `GTM-Function-Call` is not `GTM-F`.
            let endsWord = end == name.count || !(0x61...0x7A).contains(name[end])
            let candidate = String(decoding: name[i..<end], as: UTF8.self)
            if endsWord, ContainerLoader.isContainerID(candidate) { found = candidate }
            i = max(end, i + 4)
        }
        return found
    }

    private static func error(
        _ code: ContainerError.Code,
        _ message: String,
        _ document: SourceDocument,
        pointer: String = ""
    ) -> ContainerError {
        ContainerError(code, message, file: document.file, pointer: pointer, location: document.locate(pointer))
    }

    private static func article(_ typeName: String) -> String {
        (typeName.first.map { "aeiou".contains($0) } ?? false) ? "an \(typeName)" : "a \(typeName)"
    }

    /// Builds the indexes: rules by required event name, tag firing order, macro names; and the
    /// predicates' precomputed operands.
    static func finishIndexes(_ program: inout Program) {
        for p in program.predicates.indices {
            let predicate = program.predicates[p]
            if case .literal(let literal) = predicate.arg1, !literal.isUndefined || program.undefinedComparesAsText,
                !(predicate.anyOf && literal.arrayValue != nil)
            {
                program.predicates[p].constantText =
                    predicate.ignoreCase ? literal.jsString.lowercased() : literal.jsString
            }
            if case .macro(let m) = predicate.arg0, case .eventName = program.macros[m].kind,
                program.macros[m].format.isEmpty
            {
                program.predicates[p].testsEventName = true
            }
        }
        program.macroByName = [:]
        for (i, macro) in program.macros.enumerated() {
            if let name = macro.name, program.macroByName[name] == nil { program.macroByName[name] = i }
        }
        program.rulesByEvent = [:]
        program.unindexedRules = []
        for (r, rule) in program.rules.enumerated() {
            if let event = requiredEventName(rule, program) {
                program.rulesByEvent[event, default: []].append(r)
            } else {
                program.unindexedRules.append(r)
            }
        }
        program.tagOrder = program.tags.indices.sorted { a, b in
            let pa = program.tags[a].priority
            let pb = program.tags[b].priority
            return pa != pb ? pa > pb : a < b
        }
    }

    /// The event name a rule requires: an `if` predicate `event name equals "<literal>"`.
    static func requiredEventName(_ rule: RuleDef, _ program: Program) -> String? {
        for p in rule.ifs {
            let predicate = program.predicates[p]
            guard predicate.op == .equals, !predicate.ignoreCase, !predicate.negate,
                case .macro(let m) = predicate.arg0, case .eventName = program.macros[m].kind,
                program.macros[m].format.isEmpty, case .literal(let literal) = predicate.arg1
            else { continue }
            switch literal {
            case .undefined, .null, .array, .object: continue
            default: return literal.jsString
            }
        }
        return nil
    }
}

/// A compile error found by a front end, before the file and location are attached.
struct CompileFailure: Error {
    var code: ContainerError.Code
    var message: String
    var pointer: String

    init(_ code: ContainerError.Code, _ message: String, pointer: String) {
        self.code = code
        self.message = message
        self.pointer = pointer
    }
}

/// What a format front end produces.
struct CompilerOutput {
    var program = Program()
    var containerID: String?
    var version: String?
    /// Unsupported parts by kind (`tag type '__ua'`), with their count and first pointer.
    var unsupported: [String: (count: Int, pointer: String)] = [:]
    var unsupportedOrder: [String] = []
    /// The names of an export's custom templates (`customTemplate`), by the function their tags and variables name
    /// (`__cvt_<container id>_<template id>`).
    var customTemplateNames: [String: String] = [:]

    /// How an unsupported template of `kind` (`tag type`) reads: by its function, and a custom template (sandboxed
    /// JavaScript, which ContainerKit does not run) also by its name when the export gives it.
    func templateLabel(_ kind: String, _ function: String) -> String {
        guard function.hasPrefix("__cvt_") else { return "\(kind) '\(function)'" }
        let template = customTemplateNames[function].map { "the custom template '\($0)'" } ?? "a custom template"
        return "\(kind) '\(function)' (\(template): sandboxed JavaScript)"
    }

    mutating func noteUnsupported(_ what: String, pointer: String) {
        if let existing = unsupported[what] {
            unsupported[what] = (existing.count + 1, existing.pointer)
        } else {
            unsupported[what] = (1, pointer)
            unsupportedOrder.append(what)
        }
    }

    func unsupportedSummary(file: String?) -> [ContainerError] {
        unsupportedOrder.map { what in
            let entry = unsupported[what]!
            let times = entry.count == 1 ? "" : " (\(entry.count) times)"
            return ContainerError(
                .unsupportedFeature,
                "\(what) is not supported\(times)",
                file: file,
                pointer: entry.pointer
            )
        }
    }
}

/// Legacy v3/v4 default containers: a flat map of keys to plain values.
enum FlatValuesCompiler {
    static func compile(_ root: ValueMap) -> CompilerOutput? {
        for (_, value) in root {
            switch value {
            case .object: return nil
            case .array(let list) where list.contains(where: { $0.objectValue != nil || $0.arrayValue != nil }):
                return nil
            default: continue
            }
        }
        var output = CompilerOutput()
        output.program.flatValues = root
        return output
    }
}
