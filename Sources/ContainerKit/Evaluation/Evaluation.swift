/// One event evaluated in one container: macros (lazily, at most once each), predicates, rules, then the
/// selected tags fired in priority order. Synchronous and pure but for the handlers it calls.
struct Evaluation: MacroResolver {
    enum MemoSlot {
        case pending
        case evaluating
        case done(Value)
    }

    let container: Container
    let program: Program
    let message: ValueMap
    let model: ValueMap
    let eventName: String?
    let eventNumber: Int
    let dataLayer: DataLayer
    let handlers: TagManager.Handlers
    let recordTrace: Bool

    /// The event name as `__e` reports it (Firebase short names expanded).
    let reportedEventName: Value
    private var macroMemo: [MemoSlot] = []
    private var predicateMemo: [Int8] = []
    /// Per tag: bit 0 added, bit 1 blocked, bit 2 attempted this event, bit 3 skipped (once per load).
    private var tagState: [UInt8] = []
    private var fired: [FiredTag] = []
    private var tagStatus: [Int: FiredTag.Status] = [:]
    private var evaluatedOrder: [Int] = []

    init(
        container: Container,
        message: ValueMap,
        model: ValueMap,
        eventName: String?,
        eventNumber: Int,
        dataLayer: DataLayer,
        handlers: TagManager.Handlers,
        recordTrace: Bool
    ) {
        self.container = container
        self.program = container.program
        self.message = message
        self.model = model
        self.eventName = eventName
        self.eventNumber = eventNumber
        self.dataLayer = dataLayer
        self.handlers = handlers
        self.recordTrace = recordTrace
        if let eventName {
            reportedEventName = .string(TemplateCatalog.firebaseEventNames[eventName] ?? eventName)
        } else {
            reportedEventName = .undefined
        }
    }

    var logger: any Logger { dataLayer.tagManager.logger }

    // MARK: Running an event

    mutating func run() -> EventReport {
        if case .string(let name) = reportedEventName {
            let indexed = program.rulesByEvent[name] ?? []
            for r in indexed { applyRule(r) }
            for r in program.unindexedRules { applyRule(r) }
            if !tagState.isEmpty {
                for t in program.tagOrder where tagState[t] & 0b11 == 0b01 { _ = fire(t) }
            }
        }
        var report = EventReport(
            containerID: container.id,
            eventName: eventName,
            message: message,
            fired: fired,
            trace: nil
        )
        if recordTrace { report.trace = makeTrace() }
        return report
    }

    private mutating func applyRule(_ r: Int) {
        guard rulePasses(r) else { return }
        let rule = program.rules[r]
        if tagState.isEmpty { tagState = [UInt8](repeating: 0, count: program.tags.count) }
        for t in rule.add { tagState[t] |= 0b01 }
        for t in rule.block { tagState[t] |= 0b10 }
    }

    mutating func rulePasses(_ r: Int) -> Bool {
        let rule = program.rules[r]
        for p in rule.unless where predicate(p) { return false }
        for p in rule.ifs where !predicate(p) { return false }
        return true
    }

    /// Fires tag `t` (and its setup and teardown tags); returns how it went, or `nil` if it did not run.
    @discardableResult
    private mutating func fire(_ t: Int) -> FiredTag.Status? {
        if tagState.isEmpty { tagState = [UInt8](repeating: 0, count: program.tags.count) }
        if tagState[t] & 0b100 != 0 { return tagStatus[t] }
        tagState[t] |= 0b100
        let tag = program.tags[t]
        if case .paused = tag.kind { return nil }
        if tag.oncePerLoad {
            let key = container.id + "#" + String(t)
            let first = dataLayer.state.withLock { $0.firedOncePerLoad.insert(key).inserted }
            if !first {
                tagState[t] |= 0b1000
                return nil
            }
        }
        for setup in tag.setupTags {
            let status = fire(setup.tag)
            if setup.stopOnFailure, !Evaluation.succeeded(status) {
                tagStatus[t] = .failed("setup tag \(setup.tag) did not succeed")
                return tagStatus[t]
            }
        }
        let status = call(t, tag)
        tagStatus[t] = status
        for teardown in tag.teardownTags where !teardown.stopOnFailure || Evaluation.succeeded(status) {
            fire(teardown.tag)
        }
        return status
    }

    private static func succeeded(_ status: FiredTag.Status?) -> Bool {
        if case .ok? = status { return true }
        return false
    }

    private mutating func call(_ t: Int, _ tag: TagDef) -> FiredTag.Status {
        var record = FiredTag(
            index: t,
            tagID: tag.tagID,
            name: tag.name,
            function: tag.function,
            classPath: nil,
            parameters: ValueMap(),
            status: .unsupported
        )
        switch tag.kind {
        case .functionCall(let classPathExpr, let argumentsExpr):
            let classPath = evaluate(classPathExpr).jsString
            record.classPath = classPath
            record.parameters = evaluateArguments(argumentsExpr)
            record.status = invoke(handlerNamed: classPath, tag: tag, arguments: record.parameters)
        case .legacyFunctionCall(let name, let argumentsExpr):
            record.classPath = name
            record.parameters = evaluateArguments(argumentsExpr)
            record.status = invoke(handlerNamed: name, tag: tag, arguments: record.parameters)
        case .paused:
            return .unsupported
        case .unsupported:
            if recordTrace {
                for (key, expr) in tag.parameters { record.parameters[key] = evaluate(expr) }
            }
        }
        fired.append(record)
        return record.status
    }

    private mutating func invoke(handlerNamed name: String, tag: TagDef, arguments: ValueMap) -> FiredTag.Status {
        guard let handler = handlers.tags[name] else {
            dataLayer.tagManager.reportOnce("unhandled-tag:\(name)") {
                "no function-call tag handler is registered for '\(name)' (container \(container.id))"
            }
            return .unhandled
        }
        let call = FunctionCall(
            name: name,
            arguments: arguments,
            eventName: eventName,
            containerID: container.id,
            tagID: tag.tagID,
            displayName: tag.name,
            dataLayer: dataLayer,
            logger: logger
        )
        do {
            try handler.execute(call)
            return .ok
        } catch {
            let label = tag.tagID.map { "tag \($0)" } ?? "tag '\(tag.name ?? tag.function)'"
            logger.error("\(label) handler '\(name)' threw: \(error)")
            return .failed(String(describing: error))
        }
    }

    mutating func evaluateArguments(_ expr: Expr) -> ValueMap {
        if case .map(let entries) = expr { return ExpressionEvaluator.evaluateMap(entries, &self) }
        switch evaluate(expr) {
        case .object(let map): return map
        default: return ValueMap()
        }
    }

    // MARK: Expressions and macros

    mutating func evaluate(_ expr: Expr) -> Value {
        ExpressionEvaluator.evaluate(expr, &self)
    }

    mutating func resolve(macro index: Int) -> Value {
        if macroMemo.isEmpty { macroMemo = [MemoSlot](repeating: .pending, count: program.macros.count) }
        switch macroMemo[index] {
        case .done(let value): return value
        case .evaluating:
            let macro = program.macros[index]
            dataLayer.tagManager.reportOnce("cycle:\(container.id):\(index)", level: .error) {
                "macro cycle detected at '\(macro.name ?? macro.function)' (macro \(index)) in \(container.id); "
                    + "it evaluates to undefined"
            }
            return .undefined
        case .pending:
            macroMemo[index] = .evaluating
            let value = computeMacro(index)
            macroMemo[index] = .done(value)
            if recordTrace { evaluatedOrder.append(index) }
            return value
        }
    }

    private mutating func computeMacro(_ index: Int) -> Value {
        let macro = program.macros[index]
        var value: Value
        switch macro.kind {
        case .eventName:
            value = reportedEventName
        case .eventParameter(let key, let path, let defaultValue):
            value = message[key] ?? (path.count > 1 ? Value.object(message).value(atPath: path) : .undefined)
            if value.isUndefined, let defaultValue { value = evaluate(defaultValue) }
        case .dataLayer(_, let path, let defaultValue):
            value = Value.object(model).value(atPath: path)
            if value.isUndefined, let defaultValue { value = evaluate(defaultValue) }
        case .constant(let expr):
            value = evaluate(expr)
        case .builtIn(let builtIn):
            value = self.builtIn(builtIn)
        case .lookupTable(let input, let rows, let defaultValue):
            let key = evaluate(input).jsString
            value = .undefined
            var matched = false
            for row in rows where evaluate(row.key).jsString == key {
                value = evaluate(row.value)
                matched = true
                break
            }
            if !matched, let defaultValue { value = evaluate(defaultValue) }
        case .regexTable(let input, let rows, let replace, let defaultValue):
            value = regexTable(input: input, rows: rows, replace: replace, defaultValue: defaultValue)
        case .functionCall(let classPathExpr, let argumentsExpr):
            value = callMacro(named: evaluate(classPathExpr).jsString, arguments: evaluateArguments(argumentsExpr), macro)
        case .legacyFunctionCall(let name, let argumentsExpr):
            value = callMacro(named: name, arguments: evaluateArguments(argumentsExpr), macro)
        case .unsupported:
            value = .undefined
        }
        if !macro.format.isEmpty { value = apply(macro.format, to: value) }
        return value
    }

    private func builtIn(_ builtIn: BuiltIn) -> Value {
        let context = dataLayer.context
        switch builtIn {
        case .containerID: return .string(container.id)
        case .containerVersion: return .string(container.version)
        case .random: return .int(Int64.random(in: 0..<2_147_483_647))
        case .appID: return .string(context.appID)
        case .appName: return .string(context.appName)
        case .appVersionCode: return .string(context.appVersionCode)
        case .appVersionName: return .string(context.appVersionName)
        case .platform: return .string(context.platform)
        case .language: return .string(context.language)
        case .osVersion: return .string(context.osVersion)
        case .sdkVersion: return .string(context.sdkVersion)
        case .deviceName: return .string(context.deviceName)
        case .resolution: return .string(context.resolution)
        case .advertisingTrackingEnabled: return .bool(context.advertisingTrackingEnabled)
        case .advertiserID: return context.advertiserID.map(Value.string) ?? .undefined
        case .eventNumber: return .int(Int64(eventNumber))
        }
    }

    private mutating func regexTable(
        input: Expr,
        rows: [MacroKind.RegexRow],
        replace: Bool,
        defaultValue: Expr?
    ) -> Value {
        let subject = evaluate(input).jsString
        for row in rows {
            guard let pattern = row.pattern, let match = pattern.firstMatch(in: subject) else { continue }
            let output = evaluate(row.value)
            guard replace, case .string(let template) = output else { return output }
            let expanded = pattern.expandReplacement(template, match: match, in: subject)
            return .string(String(subject[..<match.range.lowerBound]) + expanded + String(subject[match.range.upperBound...]))
        }
        return defaultValue.map { evaluate($0) } ?? .undefined
    }

    private func callMacro(named name: String, arguments: ValueMap, _ macro: MacroDef) -> Value {
        guard let handler = handlers.macros[name] else {
            dataLayer.tagManager.reportOnce("unhandled-macro:\(name)") {
                "no function-call macro handler is registered for '\(name)' (container \(container.id))"
            }
            return .undefined
        }
        let call = FunctionCall(
            name: name,
            arguments: arguments,
            eventName: eventName,
            containerID: container.id,
            tagID: nil,
            displayName: macro.name,
            dataLayer: dataLayer,
            logger: logger
        )
        do {
            return try handler.value(for: call)
        } catch {
            logger.error("variable '\(macro.name ?? macro.function)' handler '\(name)' threw: \(error)")
            return .undefined
        }
    }

    private mutating func apply(_ format: ValueFormat, to value: Value) -> Value {
        var value = value
        switch value {
        case .null: if let expr = format.convertNullTo { value = evaluate(expr) }
        case .undefined: if let expr = format.convertUndefinedTo { value = evaluate(expr) }
        default: break
        }
        if let conversion = format.caseConversion, case .string(let s) = value {
            value = .string(conversion == .lowercase ? s.lowercased() : s.uppercased())
        }
        switch value {
        case .bool(true): if let expr = format.convertTrueTo { value = evaluate(expr) }
        case .bool(false): if let expr = format.convertFalseTo { value = evaluate(expr) }
        default: break
        }
        return value
    }

    // MARK: Predicates

    mutating func predicate(_ p: Int) -> Bool {
        if predicateMemo.isEmpty { predicateMemo = [Int8](repeating: -1, count: program.predicates.count) }
        let cached = predicateMemo[p]
        if cached >= 0 { return cached == 1 }
        let def = program.predicates[p]
        let raw = testPredicate(def)
        let result = def.negate ? !raw : raw
        predicateMemo[p] = result ? 1 : 0
        return result
    }

    private mutating func testPredicate(_ def: PredicateDef) -> Bool {
        let left = evaluate(def.arg0)
        if left.isUndefined { return false }
        let right = evaluate(def.arg1)
        if right.isUndefined { return false }
        if def.op.isNumeric {
            guard let a = left.jsNumber, let b = right.jsNumber else { return false }
            switch def.op {
            case .lessThan: return a < b
            case .lessOrEquals: return a <= b
            case .greaterThan: return a > b
            default: return a >= b
            }
        }
        var a = left.jsString
        if def.op == .regex {
            if let pattern = def.pattern { return pattern.matches(a) }
            if def.patternError != nil { return false }
            let source = right.jsString
            guard let pattern = try? RegexPattern(source, options: def.ignoreCase ? .ignoreCase : []) else {
                dataLayer.tagManager.reportOnce("bad-regex:\(container.id):\(source)") {
                    "invalid regular expression '\(source)' in \(container.id) (\(def.origin.pointer)); the condition is false"
                }
                return false
            }
            return pattern.matches(a)
        }
        var b = right.jsString
        if def.ignoreCase {
            a = a.lowercased()
            b = b.lowercased()
        }
        switch def.op {
        case .equals: return a == b
        case .contains: return TextSearch.contains(a, b)
        case .startsWith: return TextSearch.hasPrefix(a, b)
        case .endsWith: return TextSearch.hasSuffix(a, b)
        default: return false
        }
    }

    // MARK: Values for typed getters

    /// Evaluates macro `index` outside an event (typed getters).
    mutating func value(ofMacro index: Int) -> Value { resolve(macro: index) }

    // MARK: Trace

    private mutating func makeTrace() -> EvaluationTrace {
        var trace = EvaluationTrace()
        for t in program.tags.indices {
            let tag = program.tags[t]
            let state = tagState.isEmpty ? 0 : tagState[t]
            var outcome = EvaluationTrace.TagOutcome(
                index: t,
                tagID: tag.tagID,
                name: tag.name,
                function: tag.function,
                kind: .notFired,
                reason: nil
            )
            if case .paused = tag.kind {
                outcome.kind = .paused
                outcome.reason = "the tag is paused"
            } else if state & 0b1000 != 0 {
                outcome.kind = .alreadyFired
                outcome.reason = "once per load: already fired in this session"
            } else if state & 0b100 != 0, tagStatus[t] != nil {
                outcome.kind = .fired
                if case .failed(let why)? = tagStatus[t] { outcome.reason = "fired, but failed: \(why)" }
            } else if state & 0b10 != 0 {
                outcome.kind = .blocked
                outcome.reason = blockingReason(t)
            } else {
                outcome.reason = notFiredReason(t)
            }
            trace.tags.append(outcome)
        }
        for index in program.macros.indices {
            if case .functionCall = program.macros[index].kind, !wasEvaluated(index) { continue }
            if case .legacyFunctionCall = program.macros[index].kind, !wasEvaluated(index) { continue }
            _ = resolve(macro: index)
        }
        for index in evaluatedOrder {
            let macro = program.macros[index]
            guard case .done(let value) = macroMemo[index] else { continue }
            trace.variables.append(
                EvaluationTrace.VariableValue(index: index, name: macro.name, function: macro.function, value: value)
            )
        }
        return trace
    }

    private func wasEvaluated(_ index: Int) -> Bool {
        guard !macroMemo.isEmpty, case .done = macroMemo[index] else { return false }
        return true
    }

    private func ruleLabel(_ r: Int) -> String {
        program.rules[r].name.map { "trigger '\($0)'" } ?? "rule \(r)"
    }

    private mutating func blockingReason(_ t: Int) -> String {
        for (r, rule) in program.rules.enumerated() where rule.block.contains(t) && rulePasses(r) {
            return "blocked by \(ruleLabel(r))"
        }
        return "blocked"
    }

    private mutating func notFiredReason(_ t: Int) -> String {
        var reasons: [String] = []
        for (r, rule) in program.rules.enumerated() where rule.add.contains(t) {
            if let p = rule.unless.first(where: { predicate($0) }) {
                reasons.append("\(ruleLabel(r)): exception \(describe(p)) held")
            } else if let p = rule.ifs.first(where: { !predicate($0) }) {
                reasons.append("\(ruleLabel(r)): \(describe(p)) was false")
            }
        }
        if reasons.isEmpty { return "no firing trigger" }
        return reasons.joined(separator: "; ")
    }

    /// `{{Event Name}} equals "logEvent" (value: "played song")`.
    private mutating func describe(_ p: Int) -> String {
        let def = program.predicates[p]
        let subject: String
        if case .macro(let m) = def.arg0 {
            subject = "{{\(program.macros[m].name ?? program.macros[m].function)}}"
        } else {
            subject = evaluate(def.arg0).jsString
        }
        let value = evaluate(def.arg0)
        let right = evaluate(def.arg1)
        let negation = def.negate ? "not " : ""
        let shownValue = value.isUndefined ? "undefined" : "\"\(value.jsString)\""
        return "\(subject) \(negation)\(def.op.phrase) \"\(right.jsString)\" (value: \(shownValue))"
    }
}
