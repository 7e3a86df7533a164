import ContainerKit
import ContainerKitTesting
import Testing

/// A session keeps the candidate rules of the event names it pushed lately, per live container: these pin
/// that the table never answers for containers other than the live ones, and that its limits (how many
/// names it keeps, containers with more rules than a bit set holds) change no decision.
struct SessionCandidatesTests {
    /// A container whose rule `r` fires tag `r` (class path `t`, argument `rule: r`) on event `names[r]`.
    private func container(names: [String], id: String = "GTM-TEST1") throws -> Container {
        let tags = names.indices.map { r in
            """
            {"function": "__funct", "tag_id": \(r + 1), "vtp_classPath": "t",
             "vtp_functionArgument": ["list", ["map", "key", "rule", "value", \(r)]]}
            """
        }
        let predicates = names.map { #"{"function": "_eq", "arg0": ["macro", 0], "arg1": "\#($0)"}"# }
        let rules = names.indices.map { #"[["if", \#($0)], ["add", \#($0)]]"# }
        return try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: "[" + tags.joined(separator: ",") + "]",
            predicates: "[" + predicates.joined(separator: ",") + "]",
            rules: "[" + rules.joined(separator: ",") + "]",
            id: id
        )
    }

    private func firedRules(_ result: PushResult) -> [Value?] { result.fired.map { $0.parameters["rule"] } }

    @Test func aReplacedContainerIsEvaluatedWithItsOwnRulesForANameTheSessionAlreadyPushed() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.register(tagHandler: RecordingHandler(), for: "t")
        manager.add(try container(names: ["a"]))
        let session = manager.makeDataLayer()
        #expect(firedRules(session.push(event: "b")).isEmpty)  // no rule of this version can pass for "b"
        manager.add(try container(names: ["a", "b"]))  // the same ID: replaces it
        #expect(firedRules(session.push(event: "b")) == [1])
        manager.remove(id: "GTM-TEST1")
        #expect(session.push(event: "b").events.isEmpty)
    }

    @Test func hasLiveContainersFollowsWhatIsAddedAndRemoved() throws {
        let manager = TagManager(logger: InMemoryLogger())
        #expect(!manager.hasLiveContainers)
        manager.add(try container(names: ["a"]))
        manager.add(try container(names: ["b"], id: "GTM-TEST2"))
        #expect(manager.hasLiveContainers)
        manager.remove(id: "GTM-TEST1")
        #expect(manager.hasLiveContainers == !manager.containers.isEmpty)
        manager.remove(id: "GTM-TEST2")
        #expect(!manager.hasLiveContainers)
    }

    @Test func moreEventNamesThanTheSessionKeepsChangeNoDecision() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.register(tagHandler: RecordingHandler(), for: "t")
        manager.add(try container(names: ["n5", "n39"]))
        let session = manager.makeDataLayer()
        for _ in 0..<3 {
            for i in 0..<40 {
                let expected: [Value?] = i == 5 ? [0] : i == 39 ? [1] : []
                #expect(firedRules(session.push(event: "n\(i)")) == expected)
            }
        }
    }

    @Test(arguments: [3, 64, 65, 300])
    func everyRuleOfALargeContainerIsACandidateForItsName(ruleCount: Int) throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.register(tagHandler: RecordingHandler(), for: "t")
        let names = (0..<ruleCount).map { "e\($0 % 70)" }  // rules 0, 70, 140, … share a name
        manager.add(try container(names: names))
        let session = manager.makeDataLayer()
        for _ in 0..<2 {
            #expect(
                firedRules(session.push(event: "e0")) == stride(from: 0, to: ruleCount, by: 70).map { .int(Int64($0)) }
            )
            #expect(firedRules(session.push(event: "e69")).count == ruleCount / 70)
        }
    }

    @Test func everyLiveContainerOfManyGetsItsOwnCandidates() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.register(tagHandler: RecordingHandler(), for: "t")
        for (i, names) in [["e"], ["x", "e"], ["y"], ["z", "z", "e"]].enumerated() {
            manager.add(try container(names: names, id: "GTM-TEST\(i)"))
        }
        let session = manager.makeDataLayer()
        for _ in 0..<2 {
            let result = session.push(event: "e")
            #expect(result.events.map(\.containerID) == ["GTM-TEST0", "GTM-TEST1", "GTM-TEST2", "GTM-TEST3"])
            #expect(result.events.map { $0.fired.map { $0.parameters["rule"] } } == [[0], [1], [], [2]])
        }
    }
}
