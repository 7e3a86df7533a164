import Foundation

extension PushTrace {
    /// The trace as JSON text, one line, keys sorted (so the same push gives the same bytes): the shape
    /// `containerkit preview --format json`, `containerkit run --explain --format json` and a debug page send.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every member is a string, a number, a boolean or a `Value`, which encode without failing.
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a trace back from the JSON ``json()`` writes.
    /// - Throws: `DecodingError` when `text` is not such a trace.
    public init(json text: String) throws {
        self = try JSONDecoder().decode(PushTrace.self, from: Data(text.utf8))
    }

    /// The trace for people, one line per entry, indented by two spaces: what `containerkit preview` and
    /// `containerkit run --explain` print under each input line.
    ///
    /// ```
    ///   changed: genre: undefined → "rock"
    ///   GTM-K1T5 version 7:
    ///     fired:
    ///       tag 1 'Played song' __funct → com.example.Played [ok]
    ///           song = "So What"
    ///     not fired:
    ///       tag 3 'Played jazz' __funct: rule 1: {{Genre}} equals "jazz" (value: "rock") was false
    ///     variables:
    ///       Genre (__md) = "rock"
    ///   records:
    ///     → {"type":"custom_event",…} [durable]
    ///   data layer: {"event":"played","genre":"rock"}
    /// ```
    public var textLines: [String] {
        var lines: [String] = []
        switch outcome {
        case .applied: break
        case .duplicate:
            let time = duplicateOf.map { " (applied at \($0.time) ms)" } ?? ""
            lines.append(
                "  duplicate: the event id \(PushTrace.text(eventID.map(Value.string))) was seen\(time); "
                    + "nothing was applied again"
            )
            for tag in duplicateOf?.tags ?? [] { lines.append("    " + PushTrace.tagLine(tag)) }
        case .refused:
            lines.append("  refused: \(refusal.map { "\($0.code): \($0.message)" } ?? "")")
        case .deferred:
            lines.append("  deferred: no container is available yet; the push waits for one")
        case .dropped:
            lines.append("  dropped: too many pushes wait for a container")
        }
        if let consent {
            let regions = consent.regions.map { " (regions \($0.joined(separator: ", ")))" } ?? ""
            lines.append("  consent \(consent.kind)\(regions):")
            for type in consent.types {
                let change = type.before == type.after ? " (unchanged)" : ""
                lines.append(
                    "    \(type.type): \(type.before ?? "not set") → \(type.after ?? "not set")\(change)"
                )
            }
        }
        if !changes.isEmpty {
            lines.append("  changed:")
            for change in changes {
                lines.append("    \(change.key): \(PushTrace.text(change.before)) → \(PushTrace.text(change.after))")
            }
        }
        for evaluation in evaluations {
            let nested =
                evaluation.nested ? " (pushed by a tag: \(PushTrace.text(evaluation.event.map(Value.string))))" : ""
            lines.append("  \(evaluation.containerID) version \(evaluation.containerVersion)\(nested):")
            let called = evaluation.tags.filter { PushTrace.ran($0.outcome) }
            let others = evaluation.tags.filter { !PushTrace.ran($0.outcome) }
            lines.append(called.isEmpty ? "    fired: none" : "    fired:")
            for tag in called {
                lines.append("      " + PushTrace.tagLine(tag))
                if case .object(let arguments)? = tag.arguments {
                    for (key, value) in arguments { lines.append("          \(key) = \(PushTrace.text(value))") }
                }
                if tag.outcome != .fired || tag.status?.name != "ok", let reason = tag.reason {
                    lines.append("          (\(reason))")
                }
                if let unknown = tag.unknownInputs { lines.append("          (\(PushTrace.unknownText(unknown)))") }
            }
            if !others.isEmpty { lines.append("    not fired:") }
            for tag in others {
                let kind = tag.outcome == .notFired ? "" : " [\(tag.outcome.rawValue)]"
                lines.append("      \(PushTrace.tagName(tag))\(kind): \(tag.reason ?? "no reason recorded")")
                if let unknown = tag.unknownInputs { lines.append("          (\(PushTrace.unknownText(unknown)))") }
            }
            if !evaluation.variables.isEmpty { lines.append("    variables:") }
            for variable in evaluation.variables {
                lines.append(
                    "      \(variable.name ?? "#\(variable.index)") (\(variable.function)) = \(PushTrace.text(variable.value))"
                )
            }
        }
        if !records.isEmpty { lines.append("  records:") }
        for record in records {
            let arrow = record.state == .held ? "⋯ held" : (record.fromPushHook ? "→ released" : "→")
            var notes = [record.durability.rawValue]
            if let error = record.durabilityError { notes.append(error) }
            if let delivery = record.delivery {
                notes.append(delivery.rawValue + (record.deliveryReason.map { ": \($0)" } ?? ""))
            }
            lines.append("    \(arrow) \(JSONWriter.string(record.record)) [\(notes.joined(separator: ", "))]")
        }
        lines.append("  data layer: \(JSONWriter.string(dataLayer))")
        return lines
    }

    /// Whether a tag with `outcome` was triggered and reached its call (listed with the fired ones, with its
    /// status: a tag blocked by consent too).
    static func ran(_ outcome: Tag.Outcome) -> Bool {
        switch outcome {
        case .fired, .pending, .unsupported, .blockedByConsent: return true
        default: return false
        }
    }

    /// `tag 3 'Played jazz' __funct`.
    static func tagName(_ tag: Tag) -> String {
        let id = tag.tagID.map { "tag \($0)" } ?? "tag #\(tag.index)"
        let name = tag.name.map { " '\($0)'" } ?? ""
        let function = tag.function.map { " \($0)" } ?? ""
        return id + name + function
    }

    /// `tag 1 'Played song' __funct → com.example.Played [ok]`.
    static func tagLine(_ tag: Tag) -> String {
        let target = tag.classPath.map { " → \($0)" } ?? ""
        var status = tag.status?.name ?? tag.outcome.rawValue
        if let message = tag.status?.message { status += ": \(message)" }
        if let ids = tag.recordIDs, !ids.isEmpty { status += "; records \(ids.joined(separator: ", "))" }
        return "\(tagName(tag))\(target) [\(status)]"
    }

    /// A value for people: its JSON text, or `undefined`.
    static func text(_ value: Value?) -> String {
        guard let value, !value.isUndefined else { return "undefined" }
        return JSONWriter.string(value)
    }

    /// How a trace and `run` say a decision read what ContainerKit cannot evaluate (``FiredTag/unknownInputs``).
    public static func unknownText(_ inputs: [String]) -> String {
        "decided with " + inputs.joined(separator: ", ")
            + " undefined: ContainerKit cannot evaluate it as a page would, so a browser may decide otherwise"
    }

    /// A failed condition's note when it reads what ContainerKit cannot evaluate; `nil` when it reads nothing such.
    static func unknownNote(_ inputs: [String]) -> String? {
        guard !inputs.isEmpty else { return nil }
        return inputs.joined(separator: ", ")
            + " cannot be evaluated here (undefined here; a page's value is not known), so a browser may decide otherwise"
    }

    /// A failed condition in words: `rule 1: {{Genre}} equals "jazz" (value: "rock") was false`, or
    /// `trigger 'Staff': exception {{Role}} equals "staff" (value: "staff") held`.
    public static func describe(_ condition: Condition) -> String {
        let rule = condition.rule.name.map { "trigger '\($0)'" } ?? "rule \(condition.rule.index)"
        let subject = condition.variable ?? (condition.left?.jsString ?? "undefined")
        let phrase = PredicateOperator(rawValue: condition.operator)?.phrase ?? condition.operator
        let negation = condition.negate ? "not " : ""
        let right = condition.right?.jsString ?? "undefined"
        let value = condition.left.map { "\"\($0.jsString)\"" } ?? "undefined"
        let note = condition.note.map { "; \($0)" } ?? ""
        let test = "\(subject) \(negation)\(phrase) \"\(right)\" (value: \(value)\(note))"
        switch condition.role {
        case .if: return "\(rule): \(test) was false"
        case .unless: return "\(rule): exception \(test) held"
        }
    }
}
