/// The front end for compiled resources: the `resource` object of v5 mobile files and of gtm.js.
///
/// Macros, tags and predicates refer to each other by 0-based index; every index is checked here, so the
/// evaluator never meets a dangling one.
enum ResourceCompiler {
    static func compile(_ resource: Value, pointer: String) throws(CompileFailure) -> CompilerOutput {
        guard case .object(let map) = resource else {
            throw CompileFailure(
                .invalidStructure,
                "'resource' must be an object, found \(resource.typeName)",
                pointer: pointer
            )
        }
        var output = CompilerOutput()
        if let version = map["version"] { output.version = version.jsString }
        let macros = try list(map["macros"], "macros", pointer)
        let tags = try list(map["tags"], "tags", pointer)
        let predicates = try list(map["predicates"], "predicates", pointer)
        let rules = try list(map["rules"], "rules", pointer)
        var context = Context(macroCount: macros.count, tagCount: tags.count)

        for (i, raw) in macros.enumerated() {
            let at = JSONPointer.appending(pointer + "/macros", i)
            output.program.macros.append(try macro(raw, at: at, context: &context, output: &output))
        }
        for (i, raw) in tags.enumerated() {
            let at = JSONPointer.appending(pointer + "/tags", i)
            output.program.tags.append(try tag(raw, at: at, context: &context, output: &output))
        }
        for (i, raw) in predicates.enumerated() {
            let at = JSONPointer.appending(pointer + "/predicates", i)
            output.program.predicates.append(try predicate(raw, at: at, context: &context, output: &output))
        }
        for (i, raw) in rules.enumerated() {
            let at = JSONPointer.appending(pointer + "/rules", i)
            output.program.rules.append(try rule(raw, at: at, predicateCount: predicates.count, tagCount: tags.count))
        }
        return output
    }

    struct Context {
        var macroCount: Int
        var tagCount: Int
    }

    private static func list(_ value: Value?, _ name: String, _ pointer: String) throws(CompileFailure) -> [Value] {
        switch value {
        case nil, .undefined?, .null?: return []
        case .array(let items)?: return items
        case let other?:
            throw CompileFailure(
                .invalidStructure,
                "'\(name)' must be an array, found \(other.typeName)",
                pointer: pointer + "/" + name
            )
        }
    }

    private static func object(_ value: Value, _ what: String, at pointer: String) throws(CompileFailure) -> ValueMap {
        guard case .object(let map) = value else {
            throw CompileFailure(
                .invalidStructure,
                "\(what) must be an object, found \(value.typeName)",
                pointer: pointer
            )
        }
        return map
    }

    private static func functionName(_ map: ValueMap, _ what: String, at pointer: String) throws(CompileFailure)
        -> String
    {
        guard case .string(let function)? = map["function"], !function.isEmpty else {
            throw CompileFailure(.invalidStructure, "\(what) has no 'function'", pointer: pointer)
        }
        return function
    }

    /// The template parameters of an entry: `vtp_x` keys without the prefix, plus the legacy keys.
    private static func parameters(
        _ map: ValueMap,
        at pointer: String,
        context: inout Context
    ) throws(CompileFailure) -> [(key: String, value: Expr)] {
        var params: [(key: String, value: Expr)] = []
        for (key, value) in map {
            let name: String
            if key.hasPrefix("vtp_") {
                name = String(key.dropFirst(4))
            } else if key == "function_call_macro_name" || key == "additional_params" {
                name = key
            } else {
                continue
            }
            params.append((name, try expression(value, at: JSONPointer.appending(pointer, key), context: &context)))
        }
        return params
    }

    private static func macro(
        _ raw: Value,
        at pointer: String,
        context: inout Context,
        output: inout CompilerOutput
    ) throws(CompileFailure) -> MacroDef {
        let map = try object(raw, "a macro", at: pointer)
        let function = try functionName(map, "macro", at: pointer)
        let params = try parameters(map, at: pointer, context: &context)
        let kind = TemplateCatalog.macroKind(
            function: function,
            parameters: params,
            pointer: pointer,
            output: &output
        )
        var format = ValueFormat()
        let conversions: [(key: String, field: WritableKeyPath<ValueFormat, Expr?>)] = [
            ("convert_null_to", \.convertNullTo), ("convert_undefined_to", \.convertUndefinedTo),
            ("convert_true_to", \.convertTrueTo), ("convert_false_to", \.convertFalseTo),
        ]
        for conversion in conversions {
            guard let v = map[conversion.key] else { continue }
            format[keyPath: conversion.field] = try expression(v, at: pointer + "/" + conversion.key, context: &context)
        }
        switch map["convert_case_to"] {
        case .int(1)?: format.caseConversion = .lowercase
        case .int(2)?: format.caseConversion = .uppercase
        default: break
        }
        return MacroDef(
            function: function,
            name: map["instance_name"]?.stringValue,
            kind: kind,
            parameters: params,
            format: format,
            origin: Origin(pointer: pointer)
        )
    }

    private static func tag(
        _ raw: Value,
        at pointer: String,
        context: inout Context,
        output: inout CompilerOutput
    ) throws(CompileFailure) -> TagDef {
        let map = try object(raw, "a tag", at: pointer)
        let function = try functionName(map, "tag", at: pointer)
        let params = try parameters(map, at: pointer, context: &context)
        let kind = TemplateCatalog.tagKind(
            function: function,
            parameters: params,
            pointer: pointer,
            output: &output
        )
        var def = TagDef(
            function: function,
            tagID: try CompileFailure.integer(map["tag_id"], "tag id", at: pointer + "/tag_id"),
            name: map["instance_name"]?.stringValue,
            kind: kind,
            parameters: params,
            origin: Origin(pointer: pointer)
        )
        def.oncePerEvent = map["once_per_event"]?.gtmBool ?? false
        def.oncePerLoad = map["once_per_load"]?.gtmBool ?? false
        if let priority = map["priority"] {
            guard let number = priority.jsNumber else {
                throw CompileFailure(
                    .invalidStructure,
                    "tag priority must be a number, found '\(priority.jsString)'",
                    pointer: pointer + "/priority"
                )
            }
            def.priority = number
        }
        // `"consent": ["list", "analytics_storage", …]`: the consent types GTM checks (`["list"]`: none).
        if case .array(let items)? = map["consent"], case .string("list")? = items.first {
            def.consentTypes = items.dropFirst().compactMap(\.stringValue)
        }
        def.setupTags = try sequenced(map["setup_tags"], at: pointer + "/setup_tags", context: &context)
        def.teardownTags = try sequenced(map["teardown_tags"], at: pointer + "/teardown_tags", context: &context)
        return def
    }

    private static func sequenced(_ raw: Value?, at pointer: String, context: inout Context) throws(CompileFailure)
        -> [TagDef.Sequenced]
    {
        guard let raw else { return [] }
        let expr = try expression(raw, at: pointer, context: &context)
        var out: [TagDef.Sequenced] = []
        func collect(_ e: Expr) {
            switch e {
            case .tag(let index, let flag): out.append(TagDef.Sequenced(tag: index, stopOnFailure: flag != 0))
            case .list(let items): items.forEach(collect)
            default: break
            }
        }
        collect(expr)
        return out
    }

    private static func predicate(
        _ raw: Value,
        at pointer: String,
        context: inout Context,
        output: inout CompilerOutput
    ) throws(CompileFailure) -> PredicateDef {
        let map = try object(raw, "a predicate", at: pointer)
        let function = try functionName(map, "predicate", at: pointer)
        let arg0 = try expression(map["arg0"] ?? .undefined, at: pointer + "/arg0", context: &context)
        let arg1 = try expression(map["arg1"] ?? .undefined, at: pointer + "/arg1", context: &context)
        var def = TemplateCatalog.predicate(
            function: function,
            op: TemplateCatalog.predicateOperator(function),
            arg0: arg0,
            arg1: arg1,
            ignoreCase: map["ignore_case"]?.gtmBool ?? false,
            negate: map["negate"]?.gtmBool ?? false,
            pointer: pointer,
            output: &output
        )
        if map["any_of"]?.isTruthy == true {
            def.anyOf = true
            // A list's elements are the patterns, not the list's string form.
            if case .literal(.array) = arg1 {
                def.pattern = nil
                def.patternError = nil
            }
        }
        return def
    }

    private static func rule(_ raw: Value, at pointer: String, predicateCount: Int, tagCount: Int)
        throws(CompileFailure)
        -> RuleDef
    {
        guard case .array(let clauses) = raw else {
            throw CompileFailure(
                .invalidStructure,
                "a rule must be an array of clauses, found \(raw.typeName)",
                pointer: pointer
            )
        }
        var def = RuleDef(origin: Origin(pointer: pointer))
        for (c, clause) in clauses.enumerated() {
            let at = JSONPointer.appending(pointer, c)
            guard case .array(let items) = clause, case .string(let op)? = items.first else {
                throw CompileFailure(
                    .invalidStructure,
                    "a rule clause must be [\"if\"|\"unless\"|\"add\"|\"block\", …]",
                    pointer: at
                )
            }
            let limit = (op == "add" || op == "block") ? tagCount : predicateCount
            let what = (op == "add" || op == "block") ? "tag" : "predicate"
            var indices: [Int] = []
            for (k, item) in items.dropFirst().enumerated() {
                guard let number = item.jsNumber, number == number.rounded(), number >= 0, number < Double(limit)
                else {
                    throw CompileFailure(
                        .danglingReference,
                        "rule refers to \(what) '\(item.jsString)', but there are only \(limit) \(what)s",
                        pointer: JSONPointer.appending(at, k + 1)
                    )
                }
                indices.append(Int(number))
            }
            switch op {
            case "if": def.ifs += indices
            case "unless": def.unless += indices
            case "add": def.add += indices
            case "block": def.block += indices
            default: continue  // add_macro / block_macro and other clauses do not select tags
            }
        }
        return def
    }

    /// Compiles a resource value into an expression, folding constant parts.
    static func expression(_ value: Value, at pointer: String, context: inout Context) throws(CompileFailure) -> Expr {
        guard case .array(let items) = value, case .string(let head)? = items.first else {
            return .literal(value)
        }
        let rest = items.dropFirst()
        let expr: Expr
        switch head {
        case "macro":
            guard rest.count == 1, let number = rest.first?.jsNumber, number == number.rounded(), number >= 0,
                number < Double(context.macroCount)
            else {
                throw CompileFailure(
                    .danglingReference,
                    "macro reference '\(rest.first?.jsString ?? "")' does not name one of the \(context.macroCount) macros",
                    pointer: pointer
                )
            }
            return .macro(Int(number))
        case "template":
            var parts: [Expr] = []
            for (i, part) in rest.enumerated() {
                parts.append(try expression(part, at: JSONPointer.appending(pointer, i + 1), context: &context))
            }
            expr = .template(parts)
        case "escape":
            guard let inner = rest.first else {
                throw CompileFailure(.invalidStructure, "'escape' needs a value", pointer: pointer)
            }
            let compiled = try expression(inner, at: JSONPointer.appending(pointer, 1), context: &context)
            var codes: [Int] = []
            for (i, code) in rest.dropFirst().enumerated() {
                let at = JSONPointer.appending(pointer, i + 2)
                if let code = try CompileFailure.integer(code, "an escape code", at: at) { codes.append(code) }
            }
            expr = .escape(compiled, codes)
        case "list":
            var parts: [Expr] = []
            for (i, part) in rest.enumerated() {
                parts.append(try expression(part, at: JSONPointer.appending(pointer, i + 1), context: &context))
            }
            expr = .list(parts)
        case "map":
            guard rest.count % 2 == 0 else {
                throw CompileFailure(
                    .invalidStructure,
                    "'map' needs key/value pairs, found \(rest.count) items",
                    pointer: pointer
                )
            }
            var entries: [Expr.MapEntry] = []
            var i = rest.startIndex
            while i < rest.endIndex {
                let key = try expression(rest[i], at: JSONPointer.appending(pointer, i), context: &context)
                let value = try expression(rest[i + 1], at: JSONPointer.appending(pointer, i + 1), context: &context)
                entries.append(Expr.MapEntry(key: key, value: value))
                i += 2
            }
            expr = .distinctMap(entries)
        case "tag":
            guard let number = rest.first?.jsNumber, number >= 0, number < Double(context.tagCount) else {
                throw CompileFailure(
                    .danglingReference,
                    "tag reference '\(rest.first?.jsString ?? "")' does not name one of the \(context.tagCount) tags",
                    pointer: pointer
                )
            }
            let flag = try CompileFailure.integer(
                rest.dropFirst().first,
                "a tag reference's flag",
                at: JSONPointer.appending(pointer, 2)
            )
            return .tag(Int(number), flag ?? 0)
        default:
            return .literal(value)
        }
        return ExpressionFolding.fold(expr)
    }
}

/// Constant folding shared by the front ends.
enum ExpressionFolding {
    /// Replaces an expression that reads no macro by its value.
    static func fold(_ expr: Expr) -> Expr {
        switch expr {
        case .literal, .macro, .tag, .unresolved: return expr
        default:
            guard expr.isConstant, !containsTagReference(expr), !printsNullOrUndefined(expr) else { return expr }
            return .literal(ConstantEvaluator.value(of: expr))
        }
    }

    /// Whether a template in `expr` has a `null` or undefined part, which prints as nothing in a web container and
    /// as its name in a mobile one: the evaluation, which knows the platform, joins it.
    static func printsNullOrUndefined(_ expr: Expr) -> Bool {
        switch expr {
        case .template(let parts):
            return parts.contains { part in
                if case .literal(let value) = part { return value == .null || value.isUndefined }
                return printsNullOrUndefined(part)
            }
        case .list(let items): return items.contains(where: printsNullOrUndefined)
        case .map(let entries):
            return entries.contains { printsNullOrUndefined($0.key) || printsNullOrUndefined($0.value) }
        case .escape(let inner, _): return printsNullOrUndefined(inner)
        case .literal, .macro, .tag, .unresolved: return false
        }
    }

    static func containsTagReference(_ expr: Expr) -> Bool {
        switch expr {
        case .tag: return true
        case .list(let items), .template(let items): return items.contains(where: containsTagReference)
        case .map(let entries):
            return entries.contains { containsTagReference($0.key) || containsTagReference($0.value) }
        case .escape(let inner, _): return containsTagReference(inner)
        default: return false
        }
    }
}
