import ContainerKit
import ContainerKitDiff
import Foundation

/// The renderings of a diff: `text` for people, `json` for tools, `github` for workflow annotations.
enum DiffReporter {
    static let names = ["text", "json", "github"]

    static func render(_ outcome: DiffOutcome, as name: String) -> String {
        switch name {
        case "json": return JSONWriter.string(json(outcome))
        case "github": return github(outcome)
        default: return text(outcome)
        }
    }

    /// The one-line summary printed on standard error.
    static func closingLine(_ outcome: DiffOutcome) -> String {
        var line = "containerkit diff: \(outcome.structural.count) structural change(s)"
        if let replay = outcome.replay {
            line += "; \(replay.eventsReplayed) event(s) replayed, \(replay.eventsWithDifferences) with differences"
            line += " in \(replay.groups.count) group(s)"
        }
        return line
    }

    // MARK: Words

    static func value(_ value: Value?) -> String {
        guard let value else { return "(absent)" }
        return value.isUndefined ? "undefined" : JSONWriter.string(value)
    }

    static func matchPhrase(_ match: DiffMatch?, _ kind: DiffElement.Kind = .tag) -> String {
        switch match {
        case .id?: return "matched by id"
        case .name?: return kind == .value ? "matched by key" : "matched by name"
        case .conditions?: return "matched by conditions"
        case .position?:
            switch kind {
            case .tag: return "matched by class path and position"
            case .variable: return "matched by type and position"
            case .trigger, .value: return "matched by position"
            }
        case nil: return "unmatched"
        }
    }

    static func place(_ element: DiffElement?, file: String) -> String {
        guard let element else { return "" }
        if let location = element.location { return " (\(file):\(location.line):\(location.column))" }
        return element.pointer.isEmpty ? "" : " (\(file) \(element.pointer))"
    }

    static func describe(_ change: StructuralChange) -> String {
        switch change.kind {
        case .added: return "\(change.element.label) added"
        case .removed: return "\(change.element.label) removed"
        case .changed:
            let fields = change.fields.map { "\($0.field) \($0.old ?? "(absent)") → \($0.new ?? "(absent)")" }
            return "\(change.element.label) changed (\(matchPhrase(change.match, change.element.kind))): "
                + fields.joined(separator: "; ")
        }
    }

    static func describe(_ tag: TagDifference) -> String {
        switch tag.kind {
        case .onlyOld: return "\(tag.element.label) fires only in the old version"
        case .onlyNew: return "\(tag.element.label) fires only in the new version"
        case .changed:
            var parts = tag.arguments.map { "\($0.argument): \(value($0.old)) → \(value($0.new))" }
            if tag.statusChanged, let old = tag.oldTag?.status.name, let new = tag.newTag?.status.name {
                parts.append("status: \(old) → \(new)")
            }
            if tag.outputChanged {
                let old = tag.oldOutput.map { JSONWriter.string($0) } ?? "none"
                let new = tag.newOutput.map { JSONWriter.string($0) } ?? "none"
                parts.append("output: \(old) → \(new)")
            }
            return "\(tag.element.label) fires differently (\(matchPhrase(tag.match))): "
                + parts.joined(separator: "; ")
        }
    }

    /// A group's change in words, without the values when they vary from event to event.
    static func describe(_ group: DifferenceGroup) -> String {
        let tag = group.example
        guard tag.kind == .changed, !group.allSameValues else { return describe(tag) }
        var parts = tag.arguments.map { change -> String in
            let how = change.old == nil ? "added" : change.new == nil ? "removed" : "changed"
            return "argument \(change.argument) \(how)"
        }
        if tag.statusChanged, let old = tag.oldTag?.status.name, let new = tag.newTag?.status.name {
            parts.append("status: \(old) → \(new)")
        }
        if tag.outputChanged { parts.append("handler output changed") }
        return "\(tag.element.label) fires differently (\(matchPhrase(tag.match))): " + parts.joined(separator: "; ")
    }

    static func lines(_ group: DifferenceGroup) -> String {
        let list = group.lines.map(String.init).joined(separator: ", ")
        return group.count > group.lines.count
            ? "lines \(list), …" : (group.lines.count == 1 ? "line " : "lines ") + list
    }

    // MARK: Text

    static func text(_ outcome: DiffOutcome) -> String {
        var out: [String] = []
        out.append(
            "diff \(outcome.oldPath) (\(outcome.old.id) version \(outcome.old.version)) → "
                + "\(outcome.newPath) (\(outcome.new.id) version \(outcome.new.version))"
        )
        out.append("")
        let structural = outcome.structural
        if structural.isEmpty {
            let what =
                outcome.old.format == .flatValues || outcome.new.format == .flatValues
                ? "tag, trigger, variable or value" : "tag, trigger or variable"
            out.append("structure: no \(what) added, removed or changed")
        } else {
            let added = structural.filter { $0.kind == .added }.count
            let removed = structural.filter { $0.kind == .removed }.count
            out.append("structure: \(added) added, \(removed) removed, \(structural.count - added - removed) changed")
            for change in structural {
                switch change.kind {
                case .added: out.append("  + \(change.element.label)\(place(change.new, file: outcome.newPath))")
                case .removed: out.append("  - \(change.element.label)\(place(change.old, file: outcome.oldPath))")
                case .changed:
                    out.append(
                        "  ~ \(change.element.label) (\(matchPhrase(change.match, change.element.kind)))"
                            + place(change.new, file: outcome.newPath)
                    )
                    for field in change.fields {
                        out.append("      \(field.field): \(field.old ?? "(absent)") → \(field.new ?? "(absent)")")
                    }
                }
            }
        }
        guard let replay = outcome.replay else { return out.joined(separator: "\n") }
        out.append("")
        out.append(
            "replay of \(outcome.eventsPath ?? "-"): \(replay.eventsReplayed) event(s), "
                + "\(replay.eventsWithDifferences) with differences"
        )
        if !outcome.events.isEmpty {
            out.append("")
            let more = replay.eventsWithDifferences - outcome.events.count
            out.append(
                "events" + (more > 0 ? " (the first \(outcome.events.count); \(more) more below in groups)" : "") + ":"
            )
            for event in outcome.events {
                out.append("  line \(event.line): " + (event.event.map { "event \"\($0)\"" } ?? "push (no event)"))
                for tag in event.tags {
                    let sign = tag.kind == .onlyOld ? "-" : tag.kind == .onlyNew ? "+" : "~"
                    out.append("    \(sign) \(describe(tag))")
                }
            }
        }
        if !replay.groups.isEmpty {
            out.append("")
            out.append("differences, grouped:")
            for group in replay.groups {
                let events = group.events.map { "\"\($0)\"" }.joined(separator: ", ")
                out.append(
                    "  \(group.count) event(s): \(describe(group)) — \(lines(group))"
                        + (events.isEmpty ? "" : "; events \(events)")
                )
                if group.example.kind == .changed && !group.allSameValues {
                    out.append("      first: line \(group.lines[0]): \(describe(group.example))")
                }
            }
        }
        out.append("")
        out.append("tags fired (old → new):")
        for count in replay.tagCounts {
            let mark = count.oldFired == count.newFired ? " " : "*"
            out.append("  \(mark) \(count.element.label): \(count.oldFired) → \(count.newFired)")
        }
        return out.joined(separator: "\n")
    }

    // MARK: JSON

    static func json(_ element: DiffElement?) -> Value {
        guard let element else { return .null }
        var map = ValueMap()
        map["kind"] = .string(element.kind.rawValue)
        map["id"] = element.id.map(Value.string) ?? .null
        map["name"] = element.name.map(Value.string) ?? .null
        map["index"] = .int(Int64(element.index))
        map["pointer"] = .string(element.pointer)
        if let location = element.location {
            map["line"] = .int(Int64(location.line))
            map["column"] = .int(Int64(location.column))
        }
        return .object(map)
    }

    static func json(_ tag: TagDifference) -> Value {
        var map = ValueMap()
        map["kind"] = .string(tag.kind.rawValue)
        map["old"] = json(tag.old)
        map["new"] = json(tag.new)
        map["match"] = tag.match.map { .string($0.rawValue) } ?? .null
        map["arguments"] = .array(
            tag.arguments.map { change in
                var entry = ValueMap()
                entry["argument"] = .string(change.argument)
                entry["old"] = change.old ?? .null
                entry["old_present"] = .bool(change.old != nil)
                entry["new"] = change.new ?? .null
                entry["new_present"] = .bool(change.new != nil)
                return .object(entry)
            }
        )
        map["old_status"] = tag.oldTag.map { .string($0.status.name) } ?? .null
        map["new_status"] = tag.newTag.map { .string($0.status.name) } ?? .null
        if tag.outputChanged {
            map["old_output"] = tag.oldOutput ?? .null
            map["new_output"] = tag.newOutput ?? .null
        }
        return .object(map)
    }

    static func json(_ outcome: DiffOutcome) -> Value {
        func side(_ path: String, _ container: Container) -> Value {
            [
                "file": .string(path), "id": .string(container.id), "version": .string(container.version),
                "format": .string(container.format.rawValue),
            ]
        }
        var root = ValueMap()
        root["old"] = side(outcome.oldPath, outcome.old)
        root["new"] = side(outcome.newPath, outcome.new)
        root["structural"] = .array(
            outcome.structural.map { change in
                var map = ValueMap()
                map["kind"] = .string(change.kind.rawValue)
                map["element"] = .string(change.element.kind.rawValue)
                map["old"] = json(change.old)
                map["new"] = json(change.new)
                map["match"] = change.match.map { .string($0.rawValue) } ?? .null
                map["fields"] = .array(
                    change.fields.map { field in
                        [
                            "field": .string(field.field), "old": field.old.map(Value.string) ?? .null,
                            "new": field.new.map(Value.string) ?? .null,
                        ]
                    }
                )
                return .object(map)
            }
        )
        if let replay = outcome.replay {
            var map = ValueMap()
            map["events_file"] = outcome.eventsPath.map(Value.string) ?? .null
            map["events_replayed"] = .int(Int64(replay.eventsReplayed))
            map["events_with_differences"] = .int(Int64(replay.eventsWithDifferences))
            map["groups"] = .array(
                replay.groups.map { group in
                    guard case .object(var entry) = json(group.example) else { return .null }
                    entry["count"] = .int(Int64(group.count))
                    entry["lines"] = .array(group.lines.map { .int(Int64($0)) })
                    entry["events"] = .array(group.events.map(Value.string))
                    entry["same_values"] = .bool(group.allSameValues)
                    return .object(entry)
                }
            )
            map["tags"] = .array(
                replay.tagCounts.map { count in
                    [
                        "old": json(count.old), "new": json(count.new),
                        "match": count.match.map { .string($0.rawValue) } ?? .null,
                        "old_fired": .int(Int64(count.oldFired)), "new_fired": .int(Int64(count.newFired)),
                    ]
                }
            )
            map["events"] = .array(
                outcome.events.map { event in
                    [
                        "line": .int(Int64(event.line)), "event": event.event.map(Value.string) ?? .null,
                        "tags": .array(event.tags.map(json)),
                    ]
                }
            )
            root["replay"] = .object(map)
        }
        return .object(root)
    }

    // MARK: GitHub

    static func escapeData(_ text: String) -> String {
        text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    static func escapeProperty(_ text: String) -> String {
        escapeData(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }

    static func annotation(_ level: String, file: String, line: Int?, column: Int?, title: String, _ message: String)
        -> String
    {
        var properties = "file=" + escapeProperty(file)
        if let line { properties += ",line=\(line)" }
        if let column { properties += ",col=\(column)" }
        properties += ",title=" + escapeProperty(title)
        return "::\(level) \(properties)::\(escapeData(message))"
    }

    static func github(_ outcome: DiffOutcome) -> String {
        var out: [String] = []
        for change in outcome.structural {
            let element = change.kind == .removed ? change.old : change.new
            let file = change.kind == .removed ? outcome.oldPath : outcome.newPath
            out.append(
                annotation(
                    "warning",
                    file: file,
                    line: element?.location?.line,
                    column: element?.location?.column,
                    title: "container diff: \(change.element.kind.rawValue) \(change.kind.rawValue)",
                    describe(change)
                )
            )
        }
        if let replay = outcome.replay, let events = outcome.eventsPath {
            let file = events == "-" ? outcome.newPath : events
            for group in replay.groups {
                out.append(
                    annotation(
                        "warning",
                        file: file,
                        line: events == "-" ? nil : group.lines.first,
                        column: nil,
                        title:
                            "container diff: \(group.example.kind.rawValue.replacingOccurrences(of: "_", with: " "))",
                        "\(describe(group)) on \(group.count) of \(replay.eventsReplayed) events (\(lines(group)))"
                    )
                )
            }
        }
        return out.joined(separator: "\n")
    }
}
