import ContainerKit
import ContainerKitTesting
import Testing

/// One container whose single tag fires when predicate `function(arg0: event parameter "v", arg1)` holds.
private func predicateContainer(_ function: String, _ arg1: Value, ignoreCase: Bool = false) throws -> Container {
    let predicate = ValueMap([
        ("function", .string(function)), ("arg0", ["macro", 1]), ("arg1", arg1), ("ignore_case", .bool(ignoreCase)),
    ])
    return try TestContainers.resource(
        macros: #"[{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "v"}]"#,
        tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
        predicates: "[\(JSONWriter.string(.object(predicate)))]",
        rules: #"[[["if", 0], ["add", 0]]]"#
    )
}

extension ValueMap {
    fileprivate init(_ pairs: [(String, Value)]) {
        self.init()
        for (k, v) in pairs { self[k] = v }
    }
}

private func fires(_ container: Container, _ parameters: ValueMap) -> Bool {
    let manager = TagManager(logger: InMemoryLogger())
    manager.add(container)
    return !manager.makeDataLayer().push(event: "e", parameters: parameters).fired.isEmpty
}

struct PredicateTests {
    @Test(arguments: [
        ("_eq", Value.int(42), Value.string("42"), true),
        ("_eq", .bool(true), .string("true"), true),
        ("_eq", .string("Jazz"), .string("jazz"), false),
        ("_cn", .string("played song"), .string("song"), true),
        ("_cn", .string("played"), .string("song"), false),
        ("_sw", .string("premium-month"), .string("premium"), true),
        ("_ew", .string("premium-month"), .string("month"), true),
        ("_ew", .string("month"), .string("premium-month"), false),
        ("_re", .string("abc123"), .string("\\d+"), true),
        ("_re", .string("abc"), .string("^\\d+$"), false),
        ("_re", .string("abc"), .string("(unclosed"), false),
        ("_gt", .int(31), .string("30"), true),
        ("_gt", .string("31"), .string("30"), true),
        ("_gt", .string("abc"), .string("30"), false),
        ("_gt", .bool(true), .string("0"), false),
        ("_lt", .double(2.5), .string("3"), true),
        ("_le", .int(3), .string("3"), true),
        ("_ge", .int(2), .string("3"), false),
        ("_ge", .string(""), .string("0"), false),
    ])
    func operatorsUseJavaScriptCoercion(function: String, value: Value, arg1: Value, expected: Bool) throws {
        #expect(try fires(predicateContainer(function, arg1), ["v": value]) == expected)
    }

    @Test func undefinedOperandMakesThePredicateFalse() throws {
        #expect(try fires(predicateContainer("_eq", "undefined"), [:]) == false)
        #expect(try fires(predicateContainer("_cn", ""), [:]) == false)
    }

    @Test func ignoreCaseAppliesToRegex() throws {
        #expect(try fires(predicateContainer("_re", "^jazz$", ignoreCase: true), ["v": "JAZZ"]))
        #expect(try fires(predicateContainer("_re", "^jazz$"), ["v": "JAZZ"]) == false)
    }
}

struct RuleTests {
    let manager = TagManager(logger: InMemoryLogger())

    func container() throws -> Container {
        try TestContainers.resource(
            macros: #"[{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "genre"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "low", "priority": 1},
                 {"function": "__funct", "tag_id": 2, "vtp_classPath": "high", "priority": 50},
                 {"function": "__funct", "tag_id": 3, "vtp_classPath": "blocked"},
                 {"function": "__funct", "tag_id": 4, "vtp_classPath": "unless"},
                 {"function": "__funct", "tag_id": 5, "vtp_classPath": "once", "once_per_load": true},
                 {"function": "__paused", "tag_id": 6, "vtp_originalTagType": "__funct"},
                 {"function": "__ua", "tag_id": 7}]
                """,
            predicates: """
                [{"function": "_eq", "arg0": ["macro", 0], "arg1": "play"},
                 {"function": "_eq", "arg0": ["macro", 1], "arg1": "test"},
                 {"function": "_re", "arg0": ["macro", 0], "arg1": "^pl"}]
                """,
            rules: """
                [[["if", 0], ["add", 0, 1, 2, 3, 4, 5, 6]],
                 [["if", 0], ["block", 2]],
                 [["if", 2], ["unless", 1], ["add", 3]],
                 [["if", 0], ["add", 1]]]
                """
        )
    }

    @Test func blockingWinsAndPriorityOrdersFiring() throws {
        manager.add(try container())
        let layer = manager.makeDataLayer()
        let fired = layer.push(event: "play").fired
        #expect(fired.map(\.tagID) == [2, 1, 4, 5, 7])
        #expect(fired.first { $0.tagID == 7 }?.status == .unsupported)
        #expect(fired.first { $0.tagID == 2 }?.status == .unhandled)
    }

    @Test func oncePerLoadFiresOncePerSession() throws {
        manager.add(try container())
        let layer = manager.makeDataLayer()
        #expect(layer.push(event: "play").fired.contains { $0.tagID == 5 })
        #expect(!layer.push(event: "play").fired.contains { $0.tagID == 5 })
        #expect(manager.makeDataLayer().push(event: "play").fired.contains { $0.tagID == 5 })
    }

    @Test func unlessPredicateStopsTheRule() throws {
        manager.add(try container())
        let layer = manager.makeDataLayer()
        // "player" matches rule 2 only (regex ^pl), which adds tag 4 unless genre == test.
        #expect(layer.push(event: "player").fired.map(\.tagID) == [4])
        #expect(layer.push(event: "player", parameters: ["genre": "test"]).fired.isEmpty)
    }

    @Test func throwingHandlerIsContainedAndOtherTagsStillFire() throws {
        struct Boom: Error {}
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(try container())
        manager.register(tagHandler: ClosureTagHandler { _ in throw Boom() }, for: "high")
        let ok = RecordingHandler()
        manager.register(tagHandler: ok, for: "low")
        let fired = manager.makeDataLayer().push(event: "play").fired
        #expect(fired.first { $0.tagID == 2 }?.status.name == "failed")
        #expect(fired.first { $0.tagID == 1 }?.status == .ok)
        #expect(ok.calls.count == 1)
        #expect(logger.entries.contains { $0.level == .error && $0.metadata["error"]?.contains("Boom") == true })
    }

    @Test func setupAndTeardownTagsRunAroundTheMainTag() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "main",
                  "setup_tags": ["list", ["tag", 1, 1]], "teardown_tags": ["list", ["tag", 2, 0]]},
                 {"function": "__funct", "tag_id": 2, "vtp_classPath": "setup"},
                 {"function": "__funct", "tag_id": 3, "vtp_classPath": "teardown"}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        for name in ["main", "setup", "teardown"] { manager.register(tagHandler: recorder, for: name) }
        manager.makeDataLayer().push(event: "go")
        #expect(recorder.calls.map(\.name) == ["setup", "main", "teardown"])

        // A failing setup tag with stop-on-failure keeps the main tag from firing.
        struct Failure: Error {}
        manager.register(tagHandler: ClosureTagHandler { _ in throw Failure() }, for: "setup")
        let fired = manager.makeDataLayer().push(event: "go").fired
        #expect(fired.map(\.classPath) == ["setup"])
    }
}

struct MacroTests {
    @Test func functionArgumentsKeepTheirTypesAndDropUndefined() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "n"},
                 {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "missing"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "vtp_functionArgument":
                  ["list", ["map", "key", "n", "value", ["macro", 1]], ["map", "key", "gone", "value", ["macro", 2]],
                   ["map", "key", "text", "value", ["template", "n=", ["macro", 1], " m=", ["macro", 2]]],
                   ["map", "key", ["macro", 0], "value", true]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "t")
        manager.makeDataLayer().push(event: "e", parameters: ["n": 3])
        let call = try #require(recorder.calls.first)
        #expect(call.arguments == ["n": 3, "text": "n=3 m=undefined", "e": true])
        #expect(call.arguments.keys == ["n", "text", "e"])
        #expect(call.tagID == 1)
        #expect(call.containerID == "GTM-TEST1")
    }

    @Test func firebaseShortEventNamesAreExpanded() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "user_engagement"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        #expect(manager.makeDataLayer().push(event: "_e").fired.count == 1)
        #expect(manager.makeDataLayer().push(event: "_unknown").fired.isEmpty)
    }

    @Test func dataLayerVariablesReadVersionTwoPathsAndDefaults() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__v", "instance_name": "genre", "vtp_name": "user.genre", "vtp_dataLayerVersion": 2},
                 {"function": "__v", "instance_name": "flat", "vtp_name": "user.genre", "vtp_dataLayerVersion": 1,
                  "vtp_setDefaultValue": true, "vtp_defaultValue": "none"}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        layer.push(["user.genre": "jazz"])
        #expect(layer.string(forKey: "genre") == "jazz")
        // Version 1 reads the raw value of the literal key, dots and all.
        #expect(layer.string(forKey: "flat") == "jazz")
        layer.push(["user": ["genre": "rock"]])
        #expect(layer.string(forKey: "genre") == "rock")
        #expect(layer.string(forKey: "flat") == "jazz")
    }

    @Test func variablesWithAndWithoutADotReadTheMemberOrWalkThePath() throws {
        // An undotted key is read as the member itself; a dotted one as the literal key first (event
        // parameters), then along its segments.
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__v", "instance_name": "plan", "vtp_name": "plan", "vtp_dataLayerVersion": 2,
                  "vtp_setDefaultValue": true, "vtp_defaultValue": "free"},
                 {"function": "__v", "instance_name": "city", "vtp_name": "user.address.city",
                  "vtp_dataLayerVersion": 2, "vtp_setDefaultValue": true, "vtp_defaultValue": "nowhere"},
                 {"function": "__md", "instance_name": "genre", "vtp_eventType": "CUSTOM", "vtp_key": "genre"},
                 {"function": "__md", "instance_name": "artist", "vtp_eventType": "CUSTOM", "vtp_key": "song.artist"}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        #expect(layer.string(forKey: "plan") == "free")
        #expect(layer.string(forKey: "city") == "nowhere")
        layer.push(["plan": "pro", "user": ["address": ["city": "Lyon"]]])
        #expect(layer.string(forKey: "plan") == "pro")
        #expect(layer.string(forKey: "city") == "Lyon")
        // Event parameters read the pushed message, seen by a tag's arguments.
        let tagged = try TestContainers.resource(
            macros: """
                [{"function": "__e"},
                 {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "genre"},
                 {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "song.artist"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "vtp_functionArgument": ["list",
                  ["map", "key", "source", "value", "message"], ["map", "key", "genre", "value", ["macro", 1]],
                  ["map", "key", "artist", "value", ["macro", 2]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "play"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let taggedManager = TagManager(logger: InMemoryLogger())
        taggedManager.add(tagged)
        let session = taggedManager.makeDataLayer()
        let nested = session.push(event: "play", parameters: ["genre": "jazz", "song": ["artist": "Monk"]])
        #expect(nested.fired.first?.parameters == ["source": "message", "genre": "jazz", "artist": "Monk"])
        // A dotted key is only walked, as the v5 runtime's `__md_main` does: a parameter named with the dots is not read.
        let literal = session.push(event: "play", parameters: ["song.artist": "Davis", "song": ["artist": "Monk"]])
        #expect(literal.fired.first?.parameters == ["source": "message", "artist": "Monk"])
    }

    @Test func versionOneVariablesReadTheLastRawValueWithoutMerging() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__v", "instance_name": "element", "vtp_name": "gtm.element"},
                 {"function": "__v", "instance_name": "product", "vtp_name": "product", "vtp_dataLayerVersion": 1},
                 {"function": "__v", "instance_name": "merged", "vtp_name": "product", "vtp_dataLayerVersion": 2}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        layer.push(["gtm.element": "button#buy", "product": ["id": "p1", "color": "red"]])
        layer.push(["product": ["id": "p2"]])
        // A missing version is version 1: the literal dotted key is found.
        #expect(layer.string(forKey: "element") == "button#buy")
        // Version 1: only the last object pushed; version 2: the merge of both.
        #expect(layer.rawValue(forKey: "product") == ["id": "p2"])
        let merged = try #require(layer.model["product"]?.objectValue)
        #expect(merged["color"] == "red" && merged["id"] == "p2")
        layer.clear()
        #expect(layer.rawValue(forKey: "product") == .undefined)
    }

    @Test func userPropertyVariablesReadTheSessionsOwnStoreNotEventParameters() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__fup", "instance_name": "plan", "vtp_key": "plan",
                  "vtp_setDefaultValue": true, "vtp_defaultValue": "free"}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        layer.push(event: "upgrade", parameters: ["plan": "event-parameter"])
        #expect(layer.string(forKey: "plan") == "free")
        layer.setUserProperty("pro", forKey: "plan")
        #expect(layer.string(forKey: "plan") == "pro")
        layer.push([DataLayer.userPropertiesKey: ["plan": "team"]])
        #expect(layer.string(forKey: "plan") == "team")
        #expect(layer.model[DataLayer.userPropertiesKey] == nil)
        layer.push([DataLayer.userPropertiesKey: ["plan": nil]])
        #expect(layer.userProperty("plan") == nil)
        #expect(layer.string(forKey: "plan") == "free")
    }

    @Test func lookupAndRegexTablesPickTheFirstMatchingRow() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__v", "vtp_name": "plan"},
                 {"function": "__smm", "instance_name": "lookup", "vtp_input": ["macro", 0], "vtp_setDefaultValue": true,
                  "vtp_defaultValue": "other", "vtp_map": ["list", ["map", "key", "a", "value", 1], ["map", "key", "a", "value", 2]]},
                 {"function": "__remm", "instance_name": "regex", "vtp_input": ["macro", 0], "vtp_fullMatch": true,
                  "vtp_ignoreCase": true, "vtp_replaceAfterMatch": true,
                  "vtp_map": ["list", ["map", "key", "premium-(\\\\w+)", "value", "tier $1"], ["map", "key", ".*", "value", "free"]]}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        layer.push(["plan": "a"])
        #expect(layer.value(forKey: "lookup") == 1)
        #expect(layer.string(forKey: "regex") == "free")
        layer.push(["plan": "PREMIUM-year"])
        #expect(layer.string(forKey: "lookup") == "other")
        #expect(layer.string(forKey: "regex") == "tier year")
    }

    @Test func macroCycleGivesUndefinedAndOneError() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__c", "instance_name": "a", "vtp_value": ["template", "x", ["macro", 1]]},
                 {"function": "__c", "instance_name": "b", "vtp_value": ["macro", 0]}]
                """
        )
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(container)
        let layer = manager.makeDataLayer()
        #expect(layer.value(forKey: "a") == "xundefined")
        _ = layer.value(forKey: "a")
        #expect(logger.messages(at: .error).filter { $0.contains("cycle") }.count == 1)
    }

    @Test func functionCallMacrosCallRegisteredHandlers() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__funcm", "instance_name": "score", "vtp_classPath": "com.example.Score",
                  "vtp_functionArgument": ["list", ["map", "key", "base", "value", 10]]},
                 {"function": "__funcm", "instance_name": "broken", "vtp_classPath": "com.example.Broken"}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        manager.register(
            macroHandler: ClosureMacroHandler { call in .int(call.arguments["base"]!.jsNumber.map { Int64($0) }! * 2) },
            for: "com.example.Score"
        )
        struct Broken: Error {}
        manager.register(macroHandler: ClosureMacroHandler { _ in throw Broken() }, for: "com.example.Broken")
        let layer = manager.makeDataLayer()
        #expect(layer.int64(forKey: "score") == 20)
        #expect(layer.value(forKey: "broken") == .undefined)
    }

    @Test func typedGettersUseGTMDefaults() throws {
        let container = try ContainerLoader().load(
            bytes: Array(#"{"title": "Hi", "count": "7", "on": "TRUE"}"#.utf8),
            file: "GTM-FLAT1.json"
        )
        #expect(container.format == .flatValues)
        #expect(container.string(forKey: "title") == "Hi")
        #expect(container.int64(forKey: "count") == 7)
        #expect(container.double(forKey: "count") == 7)
        #expect(container.bool(forKey: "on"))
        #expect(container.string(forKey: "missing") == "")
        #expect(container.bool(forKey: "missing") == false)
        #expect(container.double(forKey: "missing") == 0)
        #expect(container.int64(forKey: "missing") == 0)
    }

    @Test func builtInsReadTheSessionContext() throws {
        let container = try TestContainers.resource(
            macros: """
                [{"function": "__p", "instance_name": "platform"}, {"function": "__l", "instance_name": "language"},
                 {"function": "__ai", "instance_name": "app"}, {"function": "__cid", "instance_name": "id"},
                 {"function": "__ctv", "instance_name": "version"}, {"function": "__ate", "instance_name": "ate"}]
                """
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer(
            context: ClientContext(
                platform: "Android",
                language: "fr",
                appID: "com.example.music",
                advertisingTrackingEnabled: true
            )
        )
        #expect(layer.string(forKey: "platform") == "Android")
        #expect(layer.string(forKey: "language") == "fr")
        #expect(layer.string(forKey: "app") == "com.example.music")
        #expect(layer.string(forKey: "id") == "GTM-TEST1")
        #expect(layer.string(forKey: "version") == "7")
        #expect(layer.bool(forKey: "ate"))
    }
}

struct HostileContainerTests {
    @Test func aLongChainOfMacrosIsCutOffInsteadOfExhaustingTheStack() throws {
        // 20,000 macros, each reading the next: far deeper than any real container.
        var macros: [String] = []
        for i in 0..<20_000 {
            macros.append(#"{"function": "__c", "instance_name": "m\#(i)", "vtp_value": ["macro", \#(i + 1)]}"#)
        }
        macros.append(#"{"function": "__c", "instance_name": "end", "vtp_value": "bottom"}"#)
        let container = try TestContainers.resource(macros: "[" + macros.joined(separator: ",") + "]")
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(container)
        let layer = manager.makeDataLayer()
        #expect(layer.value(forKey: "m0") == .undefined)
        #expect(layer.value(forKey: "m19950") == "bottom")
        #expect(
            logger.entries.contains {
                $0.message.contains("nest deeper than the limit") && $0.metadata["limit"] == "100"
            }
        )
    }
}

struct ArgumentMapTests {
    @Test func aRepeatedArgumentKeyKeepsItsFirstPlaceAndTakesTheLastValue() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "vtp_functionArgument":
                  ["list", ["map", "key", "a", "value", 1], ["map", "key", "b", "value", 2],
                   ["map", "key", "a", "value", 3], ["map", "key", ["macro", 0], "value", 4]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "b"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let fired = try #require(manager.makeDataLayer().push(event: "b").fired.first)
        // "a" keeps its first place and takes 3; the computed key "b" (the event name) overwrites b.
        #expect(fired.parameters.keys == ["a", "b"])
        #expect(fired.parameters == ["a": 3, "b": 4])
    }
}

struct CandidateRuleTests {
    @Test func eventNamesLongerThanTheCacheLimitAreStillEvaluated() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
            predicates: #"[{"function": "_sw", "arg0": ["macro", 0], "arg1": "long"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer()
        let long = "long" + String(repeating: "x", count: 1_000)
        #expect(layer.push(event: long).fired.count == 1)
        #expect(layer.push(event: "x" + long).fired.isEmpty)
        #expect(layer.push(event: "longer").fired.count == 1)
    }
}
