import ContainerKit
import ContainerKitDiff
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

/// Real container pairs built from the bundled `GTM-MUSIC01` by one edit each: the diff must report exactly
/// that edit, structurally and on replayed pushes.
struct ContainerDiffTests {
    static let musicPath = Fixtures.containersDirectory.appendingPathComponent("GTM-MUSIC01.json").path
    static let exportPath = Fixtures.containersDirectory.appendingPathComponent("GTM-MUSICEX.json").path

    static func text(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The bundled container with `edit` applied to its text; fails the test when the edit matches nothing.
    static func edited(_ path: String, _ edits: [(String, String)]) throws -> SourceDocument {
        var text = try Self.text(path)
        for (from, to) in edits {
            #expect(text.contains(from), "edit target not found: \(from)")
            text = text.replacingOccurrences(of: from, with: to)
        }
        return try ContainerLoader().readDocument(bytes: Array(text.utf8), file: path)
    }

    static func diff(_ old: SourceDocument, _ new: SourceDocument) throws -> ContainerDiff {
        let loader = ContainerLoader()
        return ContainerDiff(
            old: try loader.compile(old),
            new: try loader.compile(new),
            oldDocument: old,
            newDocument: new
        )
    }

    static func original(_ path: String = musicPath) throws -> SourceDocument {
        try edited(path, [])
    }

    static func replay(_ diff: ContainerDiff, _ pushes: [ValueMap]) -> (DiffReplay, [EventDifference?]) {
        var replay = diff.makeReplay(context: ClientContext(appID: "com.example.music"), logger: InMemoryLogger())
        var results: [EventDifference?] = []
        for (i, push) in pushes.enumerated() { results.append(replay.replay(push, line: i + 1)) }
        return (replay, results)
    }

    /// A push that names its session goes to that name's pair of sessions, made once; one that names none stays with
    /// the pair of the push before. The first pair is still ``DiffReplay/oldSession`` and ``DiffReplay/newSession``.
    @Test func aPushNamingItsSessionIsReplayedInThatSessionsPair() throws {
        let diff = try Self.diff(try Self.original(), try Self.original())
        var replay = diff.makeReplay(logger: InMemoryLogger())
        replay.replay(["user.favoriteGenre": "jazz"], line: 1)
        replay.replay(["event": "login", "user_id": "u1"], line: 2, session: "u1")
        let first = replay.currentSessions
        #expect(first.old.sessionID == "u1" && first.new.sessionID == "u1")
        replay.replay(["user.favoriteGenre": "rock"], line: 3)
        replay.replay(["event": "login", "user_id": "u2"], line: 4, session: "u2")
        replay.replay(["event": "login", "user_id": "u1"], line: 5, session: "u1")
        #expect(replay.currentSessions.old === first.old && replay.currentSessions.new === first.new)
        #expect(first.old.get("user.favoriteGenre") == "rock" && first.new.get("user.favoriteGenre") == "rock")
        #expect(replay.oldSession.sessionID == "diff" && replay.oldSession.get("user.favoriteGenre") == "jazz")
        #expect(replay.summary.eventsReplayed == 5 && replay.summary.eventsWithDifferences == 0)
    }

    @Test func aRenamedTagArgumentIsOneChangedTagWithOneArgumentRemovedAndOneAdded() throws {
        let new = try Self.edited(
            Self.musicPath,
            [("\"key\",\n            \"title\",", "\"key\",\n            \"song_title\",")]
        )
        let diff = try Self.diff(try Self.original(), new)
        let changes = diff.structuralChanges
        #expect(changes.count == 1)
        let change = try #require(changes.first)
        #expect(change.kind == .changed)
        #expect(change.element.label == "tag 1 'Braze - played song'")
        #expect(change.match == .id)
        #expect(
            change.fields == [
                FieldChange(field: "arguments.title", old: "{{Song Title}}", new: nil),
                FieldChange(field: "arguments.song_title", old: nil, new: "{{Song Title}}"),
            ]
        )
        #expect(change.new?.location?.line != nil)

        let (replay, results) = Self.replay(
            diff,
            [["event": "played song", "title": "So What", "genre": "jazz", "duration": 545], ["event": "login"]]
        )
        let event = try #require(results[0])
        #expect(event.tags.count == 1)
        #expect(event.tags[0].kind == .changed)
        #expect(
            event.tags[0].arguments == [
                ArgumentChange(argument: "title", old: "So What", new: nil),
                ArgumentChange(argument: "song_title", old: nil, new: "So What"),
            ]
        )
        #expect(results[1] == nil)
        #expect(replay.summary.eventsReplayed == 2)
        #expect(replay.summary.eventsWithDifferences == 1)
    }

    @Test func aTightenedTriggerStopsTheTagOnlyForEventsBetweenTheOldAndNewThresholds() throws {
        let new = try Self.edited(Self.musicPath, [(#""arg1": "30""#, #""arg1": "60""#)])
        let diff = try Self.diff(try Self.original(), new)
        let changes = diff.structuralChanges
        #expect(changes.count == 1)
        let change = try #require(changes.first)
        #expect(change.element.kind == .trigger)
        #expect(change.match == .position)
        #expect(
            change.fields == [
                FieldChange(
                    field: "if",
                    old: #"{{Event}} equals "played song" and {{Duration Seconds}} > "30""#,
                    new: #"{{Event}} equals "played song" and {{Duration Seconds}} > "60""#
                )
            ]
        )

        let (replay, results) = Self.replay(
            diff,
            [
                ["event": "played song", "title": "Interlude", "genre": "ambient", "duration": 45],
                ["event": "played song", "title": "So What", "genre": "jazz", "duration": 545],
                ["event": "played song", "title": "Interlude", "genre": "ambient", "duration": 50],
            ]
        )
        let first = try #require(results[0])
        #expect(first.tags.map(\.kind) == [.onlyOld])
        #expect(first.tags[0].element.label == "tag 1 'Braze - played song'")
        #expect(results[1] == nil)
        #expect(results[2] != nil)
        let group = try #require(replay.summary.groups.first)
        #expect(replay.summary.groups.count == 1)
        #expect(group.count == 2)
        #expect(group.lines == [1, 3])
        #expect(replay.summary.hasRemovals)
        let played = try #require(replay.summary.tagCounts.first { $0.element.id == "1" })
        #expect(played.oldFired == 3)
        #expect(played.newFired == 1)
    }

    @Test func aPausedTagIsReportedAsPausedAndNoLongerFires() throws {
        // The way GTM compiles a paused tag: `__paused`, the original type kept, the arguments dropped.
        var text = try Self.text(Self.musicPath)
        let start = try #require(text.range(of: #""function": "__funct",\#n        "tag_id": 2,"#))
        let end = try #require(text.range(of: #""tag_id": 3,"#))
        let replacement = """
            "function": "__paused",
                    "tag_id": 2,
                    "instance_name": "Braze - favorite genre",
                    "once_per_event": true,
                    "vtp_originalTagType": "__funct"
                  },
                  {
                    "function": "__funct",
                    
            """
        text.replaceSubrange(start.lowerBound..<end.lowerBound, with: replacement)
        let new = try ContainerLoader().readDocument(bytes: Array(text.utf8), file: Self.musicPath)
        let diff = try Self.diff(try Self.original(), new)
        let changes = diff.structuralChanges
        #expect(changes.count == 1)
        #expect(changes.first?.element.label == "tag 2 'Braze - favorite genre'")
        #expect(changes.first?.fields == [FieldChange(field: "paused", old: "false", new: "true")])

        let (_, results) = Self.replay(diff, [["event": "genre selected", "genre": "jazz"]])
        let event = try #require(results[0])
        #expect(event.tags.map(\.kind) == [.onlyOld])
        #expect(event.tags[0].old?.id == "2")
    }

    @Test func aChangedVariableDefaultChangesOnlyTheCallsThatUseTheDefault() throws {
        let new = try Self.edited(Self.musicPath, [(#""vtp_defaultValue": "USD""#, #""vtp_defaultValue": "EUR""#)])
        let diff = try Self.diff(try Self.original(), new)
        let changes = diff.structuralChanges
        #expect(changes.count == 1)
        let change = try #require(changes.first)
        #expect(change.element.label == "variable 'Currency'")
        #expect(change.match == .name)
        #expect(change.fields == [FieldChange(field: "parameters.defaultValue", old: "\"USD\"", new: "\"EUR\"")])

        let (_, results) = Self.replay(
            diff,
            [
                ["event": "purchase", "product_id": "premium-month", "price": 9.99],
                ["event": "purchase", "product_id": "premium-month", "price": 9.99, "currency": "GBP"],
            ]
        )
        let event = try #require(results[0])
        #expect(event.tags.count == 1)
        #expect(event.tags[0].element.label == "tag 4 'Braze - purchase'")
        #expect(event.tags[0].arguments == [ArgumentChange(argument: "currency", old: "USD", new: "EUR")])
        #expect(results[1] == nil)
    }

    /// A handler that reports a record per call (with an id and time unique to the call) and drops
    /// purchases in euros.
    struct RecordingHandler: FunctionCallTagHandler {
        struct Record: TagRecord {
            var jsonValue: Value
        }

        func execute(_ call: FunctionCall) throws { _ = try perform(call) }

        func perform(_ call: FunctionCall) throws -> TagOutput {
            if call.arguments["currency"] == "EUR" { return TagOutput(dropReason: "euros are not accepted") }
            let record: Value = [
                "type": "call", "id": .string(UUID().uuidString), "time": .string("\(Date().timeIntervalSince1970)"),
                "arguments": .object(call.arguments),
            ]
            return TagOutput(records: [Record(jsonValue: record)])
        }
    }

    static func replayWithHandler(_ diff: ContainerDiff, _ pushes: [ValueMap]) -> [EventDifference?] {
        var replay = diff.makeReplay(logger: InMemoryLogger()) { manager in
            manager.register(tagHandler: RecordingHandler(), for: "com.appboy.googletagmanager.BrazeGtmTagProvider")
        }
        return pushes.enumerated().map { replay.replay($0.element, line: $0.offset + 1) }
    }

    @Test func handlerOutputsAndDropsAreComparedWithoutRecordIdsAndTimes() throws {
        let original = try Self.original()
        let same = Self.replayWithHandler(
            try Self.diff(original, original),
            [
                ["event": "login", "user_id": "u1"],
                ["event": "purchase", "product_id": "premium-month", "price": 9.99],
            ]
        )
        #expect(same.allSatisfy { $0 == nil })

        let euro = try Self.edited(Self.musicPath, [(#""vtp_defaultValue": "USD""#, #""vtp_defaultValue": "EUR""#)])
        let results = Self.replayWithHandler(
            try Self.diff(original, euro),
            [["event": "purchase", "product_id": "premium-month", "price": 9.99]]
        )
        let tag = try #require(results[0]?.tags.first)
        #expect(tag.kind == .changed)
        #expect(tag.arguments == [ArgumentChange(argument: "currency", old: "USD", new: "EUR")])
        #expect(tag.statusChanged)
        #expect(tag.oldTag?.status == .ok)
        #expect(tag.newTag?.status.name == "dropped")
        #expect(tag.outputChanged)
        #expect(tag.newOutput == ["drop_reason": "euros are not accepted"])
        #expect(tag.oldOutput?.objectValue?["records"]?.arrayValue?.first?.objectValue?["id"] == nil)
    }

    @Test func anAddedTagIsAddedWithItsRuleAndFiresOnlyInTheNewVersion() throws {
        let new = try Self.edited(
            Self.musicPath,
            [
                (
                    "\"vtp_originalTagType\": \"__funct\"\n      }\n    ],",
                    """
                    "vtp_originalTagType": "__funct"
                          },
                          {"function": "__funct", "tag_id": 6, "instance_name": "Braze - skipped song",
                           "vtp_classPath": "com.appboy.googletagmanager.BrazeGtmTagProvider",
                           "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logEvent"],
                             ["map", "key", "eventName", "value", "skipped song"],
                             ["map", "key", "title", "value", ["macro", 1]]]}
                        ],
                    """
                ),
                (
                    "\"ignore_case\": true\n      }\n    ],",
                    """
                    "ignore_case": true
                          },
                          {"function": "_eq", "arg0": ["macro", 0], "arg1": "skipped song"}
                        ],
                    """
                ),
                (
                    "          4\n        ]\n      ]\n    ]",
                    "          4\n        ]\n      ],\n      [[\"if\", 6], [\"add\", 5]]\n    ]"
                ),
            ]
        )
        let diff = try Self.diff(try Self.original(), new)
        let added = diff.structuralChanges.filter { $0.kind == .added }
        #expect(added.map(\.element.label) == ["tag 6 'Braze - skipped song'", "trigger #5"])
        #expect(added[0].new?.location?.line != nil)

        let (replay, results) = Self.replay(diff, [["event": "skipped song", "title": "Intro"]])
        let event = try #require(results[0])
        #expect(event.tags.map(\.kind) == [.onlyNew])
        #expect(event.tags[0].newTag?.parameters["title"] == "Intro")
        let skipped = try #require(replay.summary.tagCounts.first { $0.element.id == "6" })
        #expect(skipped.old == nil)
        #expect(skipped.newFired == 1)
    }

    @Test func aRuleInsertedBeforeOthersChangesNoTagThatTheOthersFire() throws {
        // A new first rule (and predicate) shifts every rule and predicate index of the compiled resource.
        let object = try JSONSerialization.jsonObject(with: Data(try Self.text(Self.musicPath).utf8))
        var root = try #require(object as? [String: Any])
        var resource = try #require(root["resource"] as? [String: Any])
        var predicates = try #require(resource["predicates"] as? [Any])
        predicates.insert(["function": "_eq", "arg0": ["macro", 0], "arg1": "logout"], at: 0)
        let rules = try #require(resource["rules"] as? [[[Any]]])
        let shifted: [[[Any]]] = rules.map { rule in
            rule.map { clause in
                guard let verb = clause.first as? String, verb == "if" || verb == "unless" else { return clause }
                return [verb] + clause.dropFirst().map { (($0 as? Int) ?? 0) + 1 }
            }
        }
        resource["predicates"] = predicates
        resource["rules"] = [[["if", 0], ["add", 2]]] + shifted
        root["resource"] = resource
        let text = String(decoding: try JSONSerialization.data(withJSONObject: root), as: UTF8.self)
        let new = try ContainerLoader().readDocument(bytes: Array(text.utf8), file: Self.musicPath)
        let diff = try Self.diff(try Self.original(), new)
        let changes = diff.structuralChanges
        // The login tag gains a trigger; the new rule is added; nothing else changed.
        #expect(changes.map(\.kind) == [.changed, .added])
        #expect(changes.first?.element.label == "tag 3 'Braze - login'")
        #expect(
            changes.first?.fields == [
                FieldChange(field: "firing_triggers", old: "rule #2", new: "rule #0 (new), rule #2")
            ]
        )
        #expect(changes.last?.element.kind == .trigger)
        let (replay, _) = Self.replay(diff, [["event": "login", "user_id": "u"], ["event": "logout"]])
        #expect(replay.summary.eventsWithDifferences == 1)
    }

    @Test func exportElementsPairByTheirIdsWhenRenamed() throws {
        let original = try Self.original(Self.exportPath)
        let new = try Self.edited(Self.exportPath, [("Song Title", "Track Title")])
        let diff = try Self.diff(original, new)
        let variables = diff.structuralChanges.filter { $0.element.kind == .variable }
        #expect(variables.count == 1)
        let variable = try #require(variables.first)
        #expect(variable.match == .id)
        #expect(variable.old?.id == "30")
        #expect(variable.fields == [FieldChange(field: "name", old: "\"Song Title\"", new: "\"Track Title\"")])
        // The tag that reads it now names it differently, and sends exactly what it sent before.
        let tags = diff.structuralChanges.filter { $0.element.kind == .tag }
        #expect(tags.map(\.match) == [.id])
        #expect(tags.first?.fields.map(\.new) == ["{{Track Title}}", #""{{Genre}} / {{Track Title}}""#])
        let (replay, _) = Self.replay(diff, [["event": "played song", "title": "So What", "duration": 545]])
        #expect(replay.summary.eventsWithDifferences == 0)
        #expect(replay.summary.tagCounts.first?.oldFired == 1)
    }

    /// One small container written both ways: as a GTM UI export and as the compiled resource GTM publishes.
    static let crossExport = """
        {"exportFormatVersion": 2, "containerVersion": {"containerVersionId": "4",
          "container": {"publicId": "GTM-CROSS01"},
          "variable": [{"variableId": "7", "name": "Song Title", "type": "md",
            "parameter": [{"type": "TEMPLATE", "key": "key", "value": "title"}]}],
          "trigger": [{"triggerId": "9", "name": "played song", "type": "CUSTOM_EVENT",
            "customEventFilter": [{"type": "EQUALS", "parameter": [
              {"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
              {"type": "TEMPLATE", "key": "arg1", "value": "played song"}]}]}],
          "tag": [{"tagId": "3", "name": "Log song", "type": "funct", "firingTriggerId": ["9"],
            "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "com.example.Log"},
              {"type": "LIST", "key": "functionArgument", "list": [{"type": "MAP", "map": [
                {"type": "TEMPLATE", "key": "key", "value": "title"},
                {"type": "TEMPLATE", "key": "value", "value": "{{Song Title}}"}]}]}]}]}}
        """
    static let crossResource = """
        {"resource": {"version": "4",
          "macros": [{"function": "__e", "instance_name": "Event"},
            {"function": "__md", "instance_name": "Song Title", "vtp_key": "title"}],
          "tags": [{"function": "__funct", "tag_id": 3, "instance_name": "Log song", "vtp_classPath": "com.example.Log",
            "vtp_functionArgument": ["list", ["map", "key", "title", "value", ["macro", 1]]]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "played song"}],
          "rules": [[["if", 0], ["add", 0]]]}}
        """

    @Test func anExportAndTheCompiledContainerItDescribesDoNotDiffer() throws {
        let loader = ContainerLoader()
        let export = try loader.readDocument(bytes: Array(Self.crossExport.utf8), file: "GTM-CROSS01.json")
        let resource = try loader.readDocument(bytes: Array(Self.crossResource.utf8), file: "GTM-CROSS01.json")
        let diff = try Self.diff(export, resource)
        #expect(diff.old.format == .export)
        #expect(diff.new.format == .compiledResource)
        #expect(diff.structuralChanges == [])
        #expect(diff.tagMatches.map(\.match) == [.id])
        let (replay, results) = Self.replay(diff, [["event": "played song", "title": "So What"], ["event": "x"]])
        #expect(results.allSatisfy { $0 == nil })
        #expect(replay.summary.tagCounts.first?.oldFired == 1)
        #expect(replay.summary.tagCounts.first?.newFired == 1)

        // A change on the compiled side is still seen, field by field.
        let changed = try loader.readDocument(
            bytes: Array(
                Self.crossResource.replacingOccurrences(of: "\"title\", \"value\"", with: "\"name\", \"value\"").utf8
            ),
            file: "GTM-CROSS01.json"
        )
        let fields = try Self.diff(export, changed).structuralChanges.flatMap(\.fields).map(\.field)
        #expect(fields == ["arguments.title", "arguments.name"])
    }

    @Test func theRandomNumberVariableIsTheSameOnBothSides() throws {
        let json = """
            {"resource": {"version": "1",
              "macros": [{"function": "__e"}, {"function": "__r", "instance_name": "Random"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.Sample",
                "vtp_functionArgument": ["list", ["map", "key", "sample", "value", ["macro", 1]]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "tick"}],
              "rules": [[["if", 0], ["add", 0]]]}}
            """
        let document = try ContainerLoader().readDocument(bytes: Array(json.utf8), file: "GTM-RANDOM1.json")
        let diff = try Self.diff(document, document)
        #expect(diff.structuralChanges.isEmpty)
        let (replay, results) = Self.replay(diff, Array(repeating: ["event": "tick"], count: 50))
        #expect(results.allSatisfy { $0 == nil })
        #expect(replay.summary.tagCounts.first?.oldFired == 50)
        // And the values do vary from event to event.
        let first = replay.oldSession.tagManager.randomSource.value(eventNumber: 1)
        let second = replay.oldSession.tagManager.randomSource.value(eventNumber: 2)
        #expect(first != second)
        #expect(RandomSource.seeded(7).value(eventNumber: 3) == RandomSource.seeded(7).value(eventNumber: 3))
    }

    @Test(.enabled(if: Fixtures.corpusDirectory != nil, Fixtures.corpusMissing))
    func everyCorpusContainerDiffedWithItselfIsEmpty() async throws {
        var diffed = 0
        var unreadable: [String] = []
        for url in Fixtures.corpusFiles() {
            let loader = ContainerLoader()
            guard let document = try? await loader.readDocument(path: url.path),
                let container = try? loader.compile(document)
            else {
                unreadable.append(Fixtures.corpusName(url))
                continue
            }
            let diff = ContainerDiff(old: container, new: container, oldDocument: document, newDocument: document)
            #expect(diff.structuralChanges.isEmpty, "\(Fixtures.corpusName(url))")
            // Replay every event name the container tests for, twice, with a few parameters.
            var names = Set(["gtm.js", "gtm.load", "screen_view", "purchase", "_e"])
            if case .object(let root) = document.value {
                collectStrings(.object(root), into: &names, limit: 60)
            }
            var replay = diff.makeReplay(logger: InMemoryLogger())
            var line = 0
            for round in 0..<2 {
                for name in names.sorted() {
                    line += 1
                    let push: ValueMap = ["event": .string(name), "value": .int(Int64(round)), "item": "x"]
                    let difference = replay.replay(push, line: line)
                    #expect(difference == nil, "\(Fixtures.corpusName(url)) line \(line) \(name)")
                }
            }
            #expect(replay.summary.eventsWithDifferences == 0)
            diffed += 1
        }
        // Legacy binary containers are refused by the loader; everything else is diffed.
        #expect(diffed >= 19, "diffed \(diffed); unreadable: \(unreadable)")
    }

    /// Short strings of the document (likely event names and values the predicates compare with).
    private func collectStrings(_ value: Value, into names: inout Set<String>, limit: Int) {
        guard names.count < limit else { return }
        switch value {
        case .string(let text) where text.utf8.count < 40 && !text.hasPrefix("__"): names.insert(text)
        case .array(let list): for item in list { collectStrings(item, into: &names, limit: limit) }
        case .object(let map): for (_, item) in map { collectStrings(item, into: &names, limit: limit) }
        default: break
        }
    }
}
