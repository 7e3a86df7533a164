/// The front end for GTM UI exports (`exportFormatVersion: 2`): variables, built-in variables, triggers and
/// tags by id and `{{Display Name}}`, compiled into the same program a compiled resource gives.
///
/// Each trigger becomes one predicate per condition (plus an event-name test for its type) and one rule
/// that adds the tags it fires and blocks the tags it blocks.
package enum ExportCompiler {
    static func compile(_ root: ValueMap) throws(CompileFailure) -> CompilerOutput {
        guard case .object(let version)? = root["containerVersion"] else {
            throw CompileFailure(
                .invalidStructure,
                "'containerVersion' must be an object",
                pointer: "/containerVersion"
            )
        }
        var compiler = ExportCompiler.State(version: version)
        try compiler.run()
        return compiler.output
    }

    /// Built-in trigger ids that appear in `firingTriggerId` without a trigger object: the name GTM shows, the
    /// event each waits for (`nil`: every event) and whether it is a web trigger.
    ///
    /// Evidence: web exports use `2147479553` (All Pages, the `gtm.js` page view), `2147479573` (Initialization)
    /// and `2147479572` (Consent Initialization); legacy binary containers name their rules
    /// `…_2147479554` "Any Event" and `…_2147479555` "Always"; Firebase (v5) exports fire Firebase
    /// event-modification tags (`fm`), which act on every event, on `2147479556` alone, and compiled v5 files
    /// hold the matching `event matches .*` rule: it is the mobile "All Events" trigger.
    package static let builtInTriggers: [String: (name: String, event: String?, isWeb: Bool)] = [
        "2147479553": ("All Pages", "gtm.js", true),
        "2147479573": ("Initialization", "gtm.init", true),
        "2147479572": ("Consent Initialization", "gtm.init_consent", true),
        "2147479554": ("Any Event", nil, false),
        "2147479555": ("Always", nil, false),
        "2147479556": ("All Events", nil, false),
    ]

    /// The event name each trigger type waits for (custom events name theirs in `customEventFilter`).
    static let triggerEvents: [String: String] = [
        "PAGEVIEW": "gtm.js", "DOM_READY": "gtm.dom", "WINDOW_LOADED": "gtm.load", "INIT": "gtm.init",
        "CONSENT_INIT": "gtm.init_consent", "CLICK": "gtm.click", "LINK_CLICK": "gtm.linkClick",
        "FORM_SUBMISSION": "gtm.formSubmit", "HISTORY_CHANGE": "gtm.historyChange", "JS_ERROR": "gtm.pageError",
        "TIMER": "gtm.timer", "SCROLL_DEPTH": "gtm.scrollDepth", "ELEMENT_VISIBILITY": "gtm.elementVisibility",
        "YOU_TUBE_VIDEO": "gtm.video",
        "FIREBASE_APP_EXCEPTION": "app_exception", "FIREBASE_APP_UPDATE": "app_update",
        "FIREBASE_CAMPAIGN": "firebase_campaign", "FIREBASE_FIRST_OPEN": "first_open",
        "FIREBASE_IN_APP_PURCHASE": "in_app_purchase", "FIREBASE_NOTIFICATION_DISMISS": "notification_dismiss",
        "FIREBASE_NOTIFICATION_FOREGROUND": "notification_foreground",
        "FIREBASE_NOTIFICATION_OPEN": "notification_open", "FIREBASE_NOTIFICATION_RECEIVE": "notification_receive",
        "FIREBASE_OS_UPDATE": "os_update", "FIREBASE_SESSION_START": "session_start",
        "FIREBASE_USER_ENGAGEMENT": "user_engagement",
    ]

    /// Trigger types whose listener names the triggers it fires for in its push (`gtm.triggers`: `"1234_50,1234_51"`):
    /// GTM compiles each such trigger with `_re({{gtm.triggers}}, "(^$|((^|,)<container>_<trigger>($|,)))")`, so a
    /// push of another trigger's listener does not fire it (the corpus' compiled `gtm.js` data: link clicks, timers,
    /// form submissions, element visibility, scroll depth).
    static let listenerTriggerTypes: Set<String> = [
        "LINK_CLICK", "TIMER", "FORM_SUBMISSION", "ELEMENT_VISIBILITY", "SCROLL_DEPTH", "YOU_TUBE_VIDEO",
    ]

    /// Trigger types that are browser interactions (they fire only on their `gtm.*` event, if ever pushed).
    static let browserTriggerTypes: Set<String> = [
        "CLICK", "LINK_CLICK", "FORM_SUBMISSION", "HISTORY_CHANGE", "JS_ERROR", "TIMER", "SCROLL_DEPTH",
        "ELEMENT_VISIBILITY", "YOU_TUBE_VIDEO",
    ]

    /// The display name GTM gives each built-in variable type (what `{{…}}` references use).
    static let builtInDisplayNames: [String: String] = [
        "EVENT": "Event", "EVENT_NAME": "Event Name", "CONTAINER_ID": "Container ID",
        "CONTAINER_VERSION": "Container Version", "RANDOM_NUMBER": "Random Number", "DEBUG_MODE": "Debug Mode",
        "APP_ID": "App ID", "APP_NAME": "App Name", "APP_VERSION_CODE": "App Version Code",
        "APP_VERSION_NAME": "App Version Name", "LANGUAGE": "Language", "OS_VERSION": "OS Version",
        "PLATFORM": "Platform", "SDK_VERSION": "SDK Version", "DEVICE_NAME": "Device Name",
        "RESOLUTION": "Screen Resolution", "ADVERTISER_ID": "Advertiser ID",
        "ADVERTISING_TRACKING_ENABLED": "Advertiser Tracking Enabled", "PAGE_URL": "Page URL",
        "PAGE_HOSTNAME": "Page Hostname", "PAGE_PATH": "Page Path", "REFERRER": "Referrer",
        "CLICK_ELEMENT": "Click Element", "CLICK_CLASSES": "Click Classes", "CLICK_ID": "Click ID",
        "CLICK_TARGET": "Click Target", "CLICK_URL": "Click URL", "CLICK_TEXT": "Click Text",
        "FORM_ELEMENT": "Form Element", "FORM_CLASSES": "Form Classes", "FORM_ID": "Form ID",
        "FORM_TARGET": "Form Target", "FORM_URL": "Form URL", "FORM_TEXT": "Form Text",
        "ERROR_MESSAGE": "Error Message", "ERROR_URL": "Error URL", "ERROR_LINE": "Error Line",
        "NEW_HISTORY_FRAGMENT": "New History Fragment", "OLD_HISTORY_FRAGMENT": "Old History Fragment",
        "NEW_HISTORY_STATE": "New History State", "OLD_HISTORY_STATE": "Old History State",
        "HISTORY_SOURCE": "History Source",
    ]

    /// The display name of built-in variable type `type` (either spelling); the type itself when unknown.
    package static func builtInDisplayName(ofType type: String) -> String {
        builtInDisplayNames[upperSnakeCase(type)] ?? type
    }

    /// A type name in the GTM API v1 spelling (`appVersionCode`) in the v2 one (`APP_VERSION_CODE`); a name
    /// already in upper case stays as it is.
    static func upperSnakeCase(_ name: String) -> String {
        var result = ""
        var previousLower = false
        for character in name {
            if character.isUppercase, previousLower { result.append("_") }
            previousLower = character.isLowercase || character.isNumber
            result.append(contentsOf: character.uppercased())
        }
        return result
    }

    /// The web built-in variables that read a key GTM's listeners push (a click's `gtm.elementUrl`, an error's
    /// `gtm.errorMessage`, …), as GTM compiles them: a data-layer variable of that key (the corpus' compiled `gtm.js`
    /// data; Google's help, "Built-in variables for web containers"). Click and form text, which read the page, are not
    /// among them.
    static let webDataLayerBuiltIns: [String: String] = [
        "CLICK_ELEMENT": "gtm.element", "CLICK_CLASSES": "gtm.elementClasses", "CLICK_ID": "gtm.elementId",
        "CLICK_TARGET": "gtm.elementTarget", "CLICK_URL": "gtm.elementUrl",
        "FORM_ELEMENT": "gtm.element", "FORM_CLASSES": "gtm.elementClasses", "FORM_ID": "gtm.elementId",
        "FORM_TARGET": "gtm.elementTarget", "FORM_URL": "gtm.elementUrl",
        "ERROR_MESSAGE": "gtm.errorMessage", "ERROR_URL": "gtm.errorUrl", "ERROR_LINE": "gtm.errorLineNumber",
        "NEW_HISTORY_FRAGMENT": "gtm.newUrlFragment", "OLD_HISTORY_FRAGMENT": "gtm.oldUrlFragment",
        "NEW_HISTORY_STATE": "gtm.newHistoryState", "OLD_HISTORY_STATE": "gtm.oldHistoryState",
        "HISTORY_SOURCE": "gtm.historyChangeSource", "NEW_HISTORY_URL": "gtm.newUrl", "OLD_HISTORY_URL": "gtm.oldUrl",
        "SCROLL_DEPTH_THRESHOLD": "gtm.scrollThreshold", "SCROLL_DEPTH_UNITS": "gtm.scrollUnits",
        "SCROLL_DEPTH_DIRECTION": "gtm.scrollDirection",
        "ELEMENT_VISIBILITY_RATIO": "gtm.visibleRatio", "ELEMENT_VISIBILITY_TIME": "gtm.visibleTime",
        "ELEMENT_VISIBILITY_FIRST_TIME": "gtm.visibleFirstTime",
        "ELEMENT_VISIBILITY_RECENT_TIME": "gtm.visibleLastTime",
        "VIDEO_PROVIDER": "gtm.videoProvider", "VIDEO_STATUS": "gtm.videoStatus", "VIDEO_URL": "gtm.videoUrl",
        "VIDEO_TITLE": "gtm.videoTitle", "VIDEO_DURATION": "gtm.videoDuration",
        "VIDEO_CURRENT_TIME": "gtm.videoCurrentTime", "VIDEO_PERCENT": "gtm.videoPercent",
        "VIDEO_VISIBLE": "gtm.videoVisible",
    ]

    /// The page's URL built-ins and the part of the URL each reads.
    static let pageBuiltIns: [String: String] = [
        "PAGE_URL": "URL", "PAGE_HOSTNAME": "HOST", "PAGE_PATH": "PATH", "REFERRER": "URL",
    ]

    /// The macro code of a built-in variable type.
    static func builtInFunction(_ type: String) -> (function: String, key: String?)? {
        let codes: [String: String] = [
            "EVENT": "__e", "EVENT_NAME": "__e", "CONTAINER_ID": "__cid", "CONTAINER_VERSION": "__ctv",
            "RANDOM_NUMBER": "__r", "APP_ID": "__ai", "APP_NAME": "__an", "APP_VERSION_CODE": "__av",
            "APP_VERSION_NAME": "__avn", "LANGUAGE": "__l", "OS_VERSION": "__ov", "PLATFORM": "__p",
            "SDK_VERSION": "__sv", "DEVICE_NAME": "__dn", "RESOLUTION": "__rs", "ADVERTISER_ID": "__aid",
            "ADVERTISING_TRACKING_ENABLED": "__ate",
        ]
        if let code = codes[type] { return (code, nil) }
        if let key = webDataLayerBuiltIns[type] { return ("__v", key) }
        // Debug Mode: true only in GTM's preview, which a server is not.
        if type == "DEBUG_MODE" { return ("__c", nil) }
        let prefix = "FIREBASE_EVENT_PARAMETER_"
        guard type.hasPrefix(prefix) else { return nil }
        var rest = String(type.dropFirst(prefix.count))
        if rest.hasPrefix("CAMPAIGN_") { rest = String(rest.dropFirst("CAMPAIGN_".count)) }
        if rest.hasPrefix("NOTIFICATION_MESSAGE_") { rest = "MESSAGE_" + rest.dropFirst("NOTIFICATION_MESSAGE_".count) }
        if rest == "NOTIFICATION_TOPIC" { rest = "TOPIC" }
        return ("__md", rest.lowercased())
    }

    /// Splits a template string into literal text and `{{Name}}` references.
    package static func templateParts(_ text: String) -> [(isReference: Bool, text: String)] {
        var parts: [(Bool, String)] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{") {
            guard let close = rest[open.upperBound...].firstRange(of: "}}") else { break }
            if open.lowerBound > rest.startIndex { parts.append((false, String(rest[..<open.lowerBound]))) }
            parts.append((true, String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append((false, String(rest))) }
        return parts
    }

    struct State {
        let version: ValueMap
        var output = CompilerOutput()
        var macroIndex: [String: Int] = [:]
        var eventMacro: Int?
        /// The `gtm.triggers` variable listener triggers test (made for the first).
        var triggersMacro: Int?
        var tagIndexByName: [String: Int] = [:]

        init(version: ValueMap) { self.version = version }

        /// Whether the export's `usageContext` names Android or iOS.
        var isMobile: Bool {
            guard case .object(let container)? = version["container"],
                case .array(let contexts)? = container["usageContext"]
            else { return false }
            return contexts.contains { context in
                let name = context.stringValue?.uppercased() ?? ""
                return name.hasPrefix("ANDROID") || name.hasPrefix("IOS")
            }
        }

        mutating func run() throws(CompileFailure) {
            if case .object(let container)? = version["container"] {
                output.containerID = container["publicId"]?.stringValue
            }
            output.version = version["containerVersionId"]?.jsString
            // Custom templates by the function their tags and variables name: `cvt_<container id>_<template id>`.
            if case .array(let templates)? = version["customTemplate"] {
                for case .object(let template) in templates {
                    guard let id = template["templateId"]?.jsString, let name = template["name"]?.stringValue,
                        let container = template["containerId"]?.jsString
                    else { continue }
                    output.customTemplateNames["__cvt_\(container)_\(id)"] = name
                }
            }
            let variables = try items("variable")
            var builtIns = try items("builtInVariable").enumerated().map {
                ($1, JSONPointer.appending("/containerVersion/builtInVariable", $0))
            }
            builtIns += enabledBuiltInVariables()
            let triggers = try items("trigger")
            let tags = try items("tag")

            // Pass 1: every name a {{reference}} can use gets a macro index.
            var pending: [(ValueMap, String, isBuiltIn: Bool)] = []
            for (i, variable) in variables.enumerated() {
                let at = JSONPointer.appending("/containerVersion/variable", i)
                guard let name = variable["name"]?.stringValue else {
                    throw CompileFailure(.invalidStructure, "variable has no 'name'", pointer: at)
                }
                if macroIndex[name] == nil { macroIndex[name] = pending.count }
                pending.append((variable, at, false))
            }
            for (builtIn, at) in builtIns {
                guard let name = builtIn["name"]?.stringValue else { continue }
                if macroIndex[name] == nil { macroIndex[name] = pending.count }
                pending.append((builtIn, at, true))
            }
            macroIndex["_event"] = pending.count
            eventMacro = pending.count
            for (i, tag) in tags.enumerated() {
                if let name = tag["name"]?.stringValue, tagIndexByName[name] == nil { tagIndexByName[name] = i }
            }

            // Pass 2: compile the variables, now that references resolve.
            for (entry, at, isBuiltIn) in pending {
                output.program.macros.append(isBuiltIn ? builtInMacro(entry, at: at) : try variableMacro(entry, at: at))
            }
            output.program.macros.append(
                MacroDef(function: "__e", name: "_event", kind: .eventName, origin: Origin(pointer: ""))
            )

            for (i, tag) in tags.enumerated() {
                output.program.tags.append(try compileTag(tag, at: JSONPointer.appending("/containerVersion/tag", i)))
            }

            // Rules: one per trigger (and per built-in trigger id used).
            var ruleByTrigger: [String: Int] = [:]
            for (i, trigger) in triggers.enumerated() {
                let at = JSONPointer.appending("/containerVersion/trigger", i)
                guard let id = trigger["triggerId"]?.jsString else {
                    throw CompileFailure(.invalidStructure, "trigger has no 'triggerId'", pointer: at)
                }
                ruleByTrigger[id] = output.program.rules.count
                output.program.rules.append(try compileTrigger(trigger, at: at))
            }
            for (t, tag) in tags.enumerated() {
                let at = JSONPointer.appending("/containerVersion/tag", t)
                for (field, isBlocking) in [("firingTriggerId", false), ("blockingTriggerId", true)] {
                    guard case .array(let ids)? = tag[field] else { continue }
                    for (k, raw) in ids.enumerated() {
                        let id = raw.jsString
                        let rule: Int
                        if let existing = ruleByTrigger[id] {
                            rule = existing
                        } else if let builtIn = ExportCompiler.builtInTriggers[id] {
                            rule = output.program.rules.count
                            ruleByTrigger[id] = rule
                            let at = JSONPointer.appending(at + "/" + field, k)
                            if builtIn.isWeb, isMobile {
                                // Its event (`gtm.js`, `gtm.init`) is a browser's: only an app that pushes it fires it.
                                output.noteUnsupported(
                                    "web built-in trigger '\(builtIn.name)' (\(id)) in a mobile container",
                                    pointer: at
                                )
                            }
                            output.program.rules.append(builtInRule((builtIn.name, builtIn.event), pointer: at))
                        } else if let number = Int(id), number >= 2_147_479_552 {
                            // A built-in trigger this runtime does not know: it never fires here.
                            rule = output.program.rules.count
                            ruleByTrigger[id] = rule
                            let at = JSONPointer.appending(at + "/" + field, k)
                            output.noteUnsupported("undocumented built-in trigger '\(id)'", pointer: at)
                            var never = RuleDef(name: "built-in trigger \(id)", origin: Origin(pointer: at))
                            never.ifs.append(neverPredicate(pointer: at))
                            output.program.rules.append(never)
                        } else {
                            throw CompileFailure(
                                .danglingReference,
                                "tag '\(tag["name"]?.jsString ?? "")' refers to trigger '\(id)', which does not exist",
                                pointer: JSONPointer.appending(at + "/" + field, k)
                            )
                        }
                        if isBlocking {
                            output.program.rules[rule].block.append(t)
                        } else {
                            output.program.rules[rule].add.append(t)
                        }
                    }
                }
            }
        }

        func items(_ key: String) throws(CompileFailure) -> [ValueMap] {
            switch version[key] {
            case nil, .null?: return []
            case .array(let list)?:
                var out: [ValueMap] = []
                for (i, item) in list.enumerated() {
                    guard case .object(let map) = item else {
                        throw CompileFailure(
                            .invalidStructure,
                            "each '\(key)' entry must be an object, found \(item.typeName)",
                            pointer: JSONPointer.appending("/containerVersion/" + key, i)
                        )
                    }
                    out.append(map)
                }
                return out
            case let other?:
                throw CompileFailure(
                    .invalidStructure,
                    "'\(key)' must be an array, found \(other.typeName)",
                    pointer: "/containerVersion/" + key
                )
            }
        }

        // MARK: Parameters

        /// A template string: literal text, one reference (keeping the variable's type), or a concatenation.
        func template(_ text: String) -> Expr {
            let parts = ExportCompiler.templateParts(text)
            if parts.isEmpty { return .literal(.string("")) }
            if parts.count == 1, !parts[0].isReference { return .literal(.string(text)) }
            let exprs: [Expr] = parts.map { part in
                guard part.isReference else { return .literal(.string(part.text)) }
                if let index = macroIndex[part.text] { return .macro(index) }
                return .unresolved(part.text)
            }
            return exprs.count == 1 ? exprs[0] : .template(exprs)
        }

        func parameter(_ raw: Value, at pointer: String) throws(CompileFailure) -> Expr {
            guard case .object(let param) = raw else {
                throw CompileFailure(
                    .invalidStructure,
                    "a parameter must be an object, found \(raw.typeName)",
                    pointer: pointer
                )
            }
            let type = (param["type"]?.stringValue ?? "TEMPLATE").uppercased()
            switch type {
            case "BOOLEAN":
                let text = param["value"]?.jsString ?? "false"
                return .literal(.bool(text.lowercased() == "true"))
            case "INTEGER":
                let text = param["value"]?.jsString ?? ""
                if let i = Int64(text) { return .literal(.int(i)) }
                if case .literal = template(text) {
                    return .literal(Value.parseDecimal(text).map(Value.double) ?? .string(text))
                }
                return template(text)
            case "LIST":
                var items: [Expr] = []
                if case .array(let list)? = param["list"] {
                    for (i, item) in list.enumerated() {
                        items.append(try parameter(item, at: JSONPointer.appending(pointer + "/list", i)))
                    }
                }
                return ExpressionFolding.fold(.list(items))
            case "MAP":
                var entries: [Expr.MapEntry] = []
                if case .array(let list)? = param["map"] {
                    for (i, item) in list.enumerated() {
                        let at = JSONPointer.appending(pointer + "/map", i)
                        guard case .object(let entry) = item else { continue }
                        let key = template(entry["key"]?.jsString ?? "")
                        entries.append(Expr.MapEntry(key: key, value: try parameter(item, at: at)))
                    }
                }
                return ExpressionFolding.fold(.distinctMap(entries))
            default:
                if let value = param["value"] {
                    if case .string(let text) = value { return template(text) }
                    return .literal(value)
                }
                // GTM's exports leave out empty strings: the compiled form of the same field is `""`.
                return .literal(.string(""))
            }
        }

        func parameters(_ owner: ValueMap, at pointer: String) throws(CompileFailure) -> [(key: String, value: Expr)] {
            guard case .array(let list)? = owner["parameter"] else { return [] }
            var out: [(key: String, value: Expr)] = []
            for (i, raw) in list.enumerated() {
                let at = JSONPointer.appending(pointer + "/parameter", i)
                guard case .object(let param) = raw, let key = param["key"]?.stringValue else { continue }
                out.append((key, try parameter(raw, at: at)))
            }
            return out
        }

        // MARK: Variables

        mutating func variableMacro(_ variable: ValueMap, at pointer: String) throws(CompileFailure) -> MacroDef {
            let type = variable["type"]?.stringValue ?? ""
            let params = try parameters(variable, at: pointer)
            let function = "__" + type
            var def = MacroDef(
                function: function,
                name: variable["name"]?.stringValue,
                kind: TemplateCatalog.macroKind(
                    function: function,
                    parameters: params,
                    pointer: pointer,
                    output: &output
                ),
                parameters: params,
                origin: Origin(pointer: pointer)
            )
            if case .object(let format)? = variable["formatValue"] {
                def.format = try valueFormat(format, at: pointer + "/formatValue")
            }
            return def
        }

        func valueFormat(_ format: ValueMap, at pointer: String) throws(CompileFailure) -> ValueFormat {
            var out = ValueFormat()
            switch format["caseConversionType"]?.stringValue?.uppercased() {
            case "LOWERCASE"?: out.caseConversion = .lowercase
            case "UPPERCASE"?: out.caseConversion = .uppercase
            default: break
            }
            if let v = format["convertNullToValue"] {
                out.convertNullTo = try parameter(v, at: pointer + "/convertNullToValue")
            }
            if let v = format["convertUndefinedToValue"] {
                out.convertUndefinedTo = try parameter(v, at: pointer + "/convertUndefinedToValue")
            }
            if let v = format["convertTrueToValue"] {
                out.convertTrueTo = try parameter(v, at: pointer + "/convertTrueToValue")
            }
            if let v = format["convertFalseToValue"] {
                out.convertFalseTo = try parameter(v, at: pointer + "/convertFalseToValue")
            }
            return out
        }

        /// The built-in variables a format 1.3 export (2016, GTM API v1) enables in
        /// `container.enabledBuiltInVariable`: a list of type names (`"event"`, `"appId"`, v1's spelling, or
        /// `"EVENT"`), each given its display name (`{{Event}}`, `{{App ID}}`) as a `builtInVariable` entry is.
        /// A type a `builtInVariable` entry already names is left to that entry.
        func enabledBuiltInVariables() -> [(ValueMap, String)] {
            guard case .object(let container)? = version["container"],
                case .array(let enabled)? = container["enabledBuiltInVariable"]
            else { return [] }
            var listed: Set<String> = []
            if case .array(let entries)? = version["builtInVariable"] {
                for case .object(let entry) in entries {
                    if let type = entry["type"]?.stringValue { listed.insert(ExportCompiler.upperSnakeCase(type)) }
                }
            }
            var result: [(ValueMap, String)] = []
            for (i, raw) in enabled.enumerated() {
                guard let written = raw.stringValue else { continue }
                let type = ExportCompiler.upperSnakeCase(written)
                guard listed.insert(type).inserted else { continue }
                let name = ExportCompiler.builtInDisplayName(ofType: written)
                result.append(
                    (
                        ["type": .string(type), "name": .string(name)],
                        JSONPointer.appending("/containerVersion/container/enabledBuiltInVariable", i)
                    )
                )
            }
            return result
        }

        mutating func builtInMacro(_ entry: ValueMap, at pointer: String) -> MacroDef {
            let type = entry["type"]?.stringValue ?? ""
            let name = entry["name"]?.stringValue
            if let component = ExportCompiler.pageBuiltIns[type] {
                // As GTM compiles them: `{"function": "__u", "vtp_component": "HOST", …}`, `{"function": "__f", …}`.
                let variable = URLVariable(component: component)
                return MacroDef(
                    function: type == "REFERRER" ? "__f" : "__u",
                    name: name,
                    kind: type == "REFERRER" ? .referrer(variable) : .url(variable),
                    origin: Origin(pointer: pointer)
                )
            }
            guard let (function, key) = ExportCompiler.builtInFunction(type) else {
                output.noteUnsupported("browser-only built-in variable '\(type)'", pointer: pointer)
                return MacroDef(
                    function: "__" + type.lowercased(),
                    name: name,
                    kind: .unsupported,
                    origin: Origin(pointer: pointer)
                )
            }
            let kind: MacroKind
            if function == "__v", let key {
                // A web built-in that reads what GTM's listener pushed, as GTM compiles it (`__v` of `gtm.elementUrl`,
                // version 1; the history URLs version 2).
                kind =
                    key == "gtm.newUrl" || key == "gtm.oldUrl"
                    ? .dataLayer(name: key, nestedPath: TemplateCatalog.nestedPath(key), defaultValue: nil)
                    : .rawDataLayer(name: key, defaultValue: nil)
            } else if function == "__c" {
                kind = .constant(.literal(.bool(false)))
            } else if let key {
                kind = .eventParameter(key: key, nestedPath: [], defaultValue: nil)
            } else if function == "__e" {
                kind = .eventName
            } else {
                kind =
                    TemplateCatalog.builtIns[TemplateCatalog.bareCode(function)].map(MacroKind.builtIn) ?? .unsupported
            }
            return MacroDef(function: function, name: name, kind: kind, origin: Origin(pointer: pointer))
        }

        // MARK: Tags

        mutating func compileTag(_ tag: ValueMap, at pointer: String) throws(CompileFailure) -> TagDef {
            let type = tag["type"]?.stringValue ?? ""
            let params = try parameters(tag, at: pointer)
            let function = "__" + type
            let paused = tag["paused"]?.gtmBool ?? false
            let kind =
                paused
                ? TagDef.Kind.paused
                : TemplateCatalog.tagKind(
                    function: function,
                    parameters: params,
                    pointer: pointer,
                    output: &output
                )
            var def = TagDef(
                function: function,
                tagID: try CompileFailure.integer(tag["tagId"], "tag id", at: pointer + "/tagId"),
                name: tag["name"]?.stringValue,
                kind: kind,
                parameters: params,
                origin: Origin(pointer: pointer)
            )
            // GTM serves a tag only inside its firing schedule; an export evaluated here has no such window.
            if tag["scheduleStartMs"] != nil || tag["scheduleEndMs"] != nil {
                output.noteUnsupported(
                    "tag firing schedule (scheduleStartMs/scheduleEndMs): the tag fires outside it too",
                    pointer: pointer + (tag["scheduleStartMs"] != nil ? "/scheduleStartMs" : "/scheduleEndMs")
                )
            }
            switch tag["tagFiringOption"]?.stringValue?.uppercased().replacingAll("_", with: "") {
            case "ONCEPEREVENT"?: def.oncePerEvent = true
            case "ONCEPERLOAD"?: def.oncePerLoad = true
            default: break
            }
            if let priority = tag["priority"] {
                let expr = try parameter(priority, at: pointer + "/priority")
                guard let number = TemplateCatalog.literalNumber(expr) else {
                    throw CompileFailure(
                        .invalidStructure,
                        "tag priority must be a number",
                        pointer: pointer + "/priority"
                    )
                }
                def.priority = number
            }
            // `consentSettings: {consentStatus: "NEEDED", consentType: {type: "LIST", list: [{value: …}]}}`.
            if case .object(let consent)? = tag["consentSettings"],
                consent["consentStatus"]?.stringValue?.uppercased() == "NEEDED"
            {
                var types: [String] = []
                if case .object(let list)? = consent["consentType"], case .array(let items)? = list["list"] {
                    for case .object(let item) in items {
                        if let type = item["value"]?.stringValue { types.append(type) }
                    }
                }
                def.consentTypes = types
            }
            def.setupTags = try sequence(tag["setupTag"], stopKey: "stopOnSetupFailure", at: pointer + "/setupTag")
            def.teardownTags = try sequence(
                tag["teardownTag"],
                stopKey: "stopTeardownOnFailure",
                at: pointer + "/teardownTag"
            )
            return def
        }

        func sequence(_ raw: Value?, stopKey: String, at pointer: String) throws(CompileFailure) -> [TagDef.Sequenced] {
            guard case .array(let list)? = raw else { return [] }
            var out: [TagDef.Sequenced] = []
            for (i, item) in list.enumerated() {
                guard case .object(let entry) = item, let name = entry["tagName"]?.stringValue else { continue }
                guard let index = tagIndexByName[name] else {
                    throw CompileFailure(
                        .danglingReference,
                        "sequenced tag '\(name)' does not exist",
                        pointer: JSONPointer.appending(pointer, i) + "/tagName"
                    )
                }
                out.append(TagDef.Sequenced(tag: index, stopOnFailure: entry[stopKey]?.gtmBool ?? false))
            }
            return out
        }

        // MARK: Triggers

        mutating func eventPredicate(_ event: String, pointer: String) -> Int {
            appendPredicate(.equals, macro: eventMacro!, text: event, pointer: pointer)
        }

        /// Appends the predicate `{{macro}} op text` (case-sensitive, not negated) that a trigger implies; its index.
        mutating func appendPredicate(_ op: PredicateOperator, macro: Int, text: String, pointer: String) -> Int {
            let index = output.program.predicates.count
            output.program.predicates.append(
                TemplateCatalog.predicate(
                    function: op.rawValue,
                    op: op,
                    arg0: .macro(macro),
                    arg1: .literal(.string(text)),
                    ignoreCase: false,
                    negate: false,
                    pointer: pointer,
                    output: &output
                )
            )
            return index
        }

        /// The export's numeric container ID (`containerVersion.containerId`), which a listener trigger's ID begins with.
        var numericContainerID: String? {
            if let id = version["containerId"]?.jsString, !id.isEmpty { return id }
            guard case .object(let container)? = version["container"] else { return nil }
            return container["containerId"]?.jsString
        }

        /// `_re({{gtm.triggers}}, "(^$|((^|,)<id>($|,)))")`: the push names this trigger, or names none (`gtm.triggers`
        /// is `""` when missing, as GTM compiles it: a version-2 data-layer variable with that default).
        mutating func listenerPredicate(_ uniqueID: String, pointer: String) -> Int {
            if triggersMacro == nil {
                triggersMacro = output.program.macros.count
                output.program.macros.append(
                    MacroDef(
                        function: "__v",
                        name: "gtm.triggers",
                        kind: .dataLayer(
                            name: "gtm.triggers",
                            nestedPath: TemplateCatalog.nestedPath("gtm.triggers"),
                            defaultValue: .literal(.string(""))
                        ),
                        origin: Origin(pointer: pointer)
                    )
                )
            }
            return appendPredicate(
                .regex,
                macro: triggersMacro!,
                text: "(^$|((^|,)\(uniqueID)($|,)))",
                pointer: pointer
            )
        }

        mutating func neverPredicate(pointer: String) -> Int {
            let index = output.program.predicates.count
            output.program.predicates.append(
                PredicateDef(
                    function: "_never",
                    op: .unsupported,
                    arg0: .literal(.undefined),
                    arg1: .literal(.undefined),
                    ignoreCase: false,
                    negate: false,
                    origin: Origin(pointer: pointer)
                )
            )
            return index
        }

        mutating func builtInRule(_ builtIn: (name: String, event: String?), pointer: String) -> RuleDef {
            var rule = RuleDef(name: builtIn.name, origin: Origin(pointer: pointer))
            if let event = builtIn.event { rule.ifs.append(eventPredicate(event, pointer: pointer)) }
            return rule
        }

        mutating func compileTrigger(_ trigger: ValueMap, at pointer: String) throws(CompileFailure) -> RuleDef {
            // v2 spells types `CUSTOM_EVENT`; format 1.3 exports (GTM API v1) `customEvent`.
            let type = ExportCompiler.upperSnakeCase(trigger["type"]?.stringValue ?? "")
            var rule = RuleDef(name: trigger["name"]?.stringValue, origin: Origin(pointer: pointer))
            if let event = ExportCompiler.triggerEvents[type] {
                rule.ifs.append(eventPredicate(event, pointer: pointer + "/type"))
                if ExportCompiler.listenerTriggerTypes.contains(type), let container = numericContainerID,
                    let id = trigger["triggerId"]?.jsString
                {
                    rule.ifs.append(listenerPredicate("\(container)_\(id)", pointer: pointer + "/type"))
                }
                if ExportCompiler.browserTriggerTypes.contains(type) {
                    output.noteUnsupported("browser trigger type '\(type)'", pointer: pointer)
                }
            } else if type != "CUSTOM_EVENT" && type != "ALWAYS" {
                output.noteUnsupported("trigger type '\(type)'", pointer: pointer)
                rule.ifs.append(neverPredicate(pointer: pointer + "/type"))
            }
            // "Enable this trigger when" (`autoEventFilter`) decides whether the page installs the trigger's listener:
            // GTM tests it on the listener tag's rule at `gtm.js`, not at the listener's push, which only an installed
            // listener makes (and which names the trigger in `gtm.triggers`, tested above).
            let listener = ExportCompiler.listenerTriggerTypes.contains(type)
            for field in ["customEventFilter", "filter", "autoEventFilter"]
            where !(listener && field == "autoEventFilter") {
                guard case .array(let conditions)? = trigger[field] else { continue }
                for (i, raw) in conditions.enumerated() {
                    let at = JSONPointer.appending(pointer + "/" + field, i)
                    rule.ifs.append(try condition(raw, at: at))
                }
            }
            return rule
        }

        mutating func condition(_ raw: Value, at pointer: String) throws(CompileFailure) -> Int {
            guard case .object(let condition) = raw else {
                throw CompileFailure(
                    .invalidStructure,
                    "a condition must be an object, found \(raw.typeName)",
                    pointer: pointer
                )
            }
            let type = condition["type"]?.stringValue ?? ""
            let params = try parameters(condition, at: pointer)
            let lookup = TemplateCatalog.lookup(params)
            let index = output.program.predicates.count
            let op = TemplateCatalog.predicateOperator(type)
            output.program.predicates.append(
                TemplateCatalog.predicate(
                    function: op == .unsupported ? type : op.rawValue,
                    op: op,
                    arg0: lookup["arg0"] ?? .literal(.undefined),
                    arg1: lookup["arg1"] ?? .literal(.undefined),
                    ignoreCase: TemplateCatalog.literalBool(lookup["ignore_case"]) ?? false,
                    negate: TemplateCatalog.literalBool(lookup["negate"]) ?? false,
                    pointer: pointer,
                    output: &output
                )
            )
            return index
        }
    }
}
