import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

extension Fidelity {
    /// Tag sequencing as gtm.js runs it (issue 42, points 1–3): `dr` and `er` in the served scripts' runtime
    /// chain a tag's setup tag, the tag and its teardown tag through success and failure continuations, and a
    /// once-only tag keeps the outcome of its one call. Each expectation below is what those functions, cut
    /// from a served gtm.js and run under node on the same tags, did.
    @Suite struct TagSequencingTests {
        struct Failure: Error {}

        /// A container whose tags call the class paths `names` (tag i calls `names[i]`, with `extra[i]` added
        /// to its JSON) and whose one rule, on event `e`, adds tag `main`.
        static func container(_ names: [String], _ extra: [String], main: Int = 1) throws -> Container {
            let tags = zip(names, extra).enumerated().map { i, pair in
                let function =
                    pair.0 == "html"
                    ? #""function": "__html", "vtp_html": "<script></script>""#
                    : #""function": "__funct", "vtp_classPath": "\#(pair.0)""#
                return #"{\#(function), "tag_id": \#(i + 1)\#(pair.1.isEmpty ? "" : ", " + pair.1)}"#
            }
            return try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: "[" + tags.joined(separator: ", ") + "]",
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", \#(main)]]]"#
            )
        }

        /// Pushes event `e` `times` times into one session and returns the class paths called at each push.
        /// The handler of a class path in `failing` throws; `flaky` throws on its first call only.
        static func calls(
            _ container: Container,
            times: Int,
            failing: Set<String> = [],
            flaky: Set<String> = [],
            session: ((TagManager) -> DataLayer)? = nil
        ) -> [[String]] {
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let seen = Mutex<Set<String>>([])
            let recorder = RecordingHandler { call in
                if failing.contains(call.name) { throw Failure() }
                if flaky.contains(call.name), seen.withLock({ $0.insert(call.name).inserted }) { throw Failure() }
            }
            for name in ["S", "M", "T", "U"] { manager.register(tagHandler: recorder, for: name) }
            let layer = session?(manager) ?? manager.makeDataLayer()
            var pushes: [[String]] = []
            for _ in 0..<times {
                pushes.append(layer.push(event: "e").fired.compactMap(\.classPath))
            }
            return pushes
        }

        // gtm.js: onceSetupSucceeded → [[S, M], [M], [M]]
        @Test func aOncePerPageSetupThatSucceededLetsItsTagFireOnEveryEvent() throws {
            let container = try Self.container(
                ["S", "M"],
                [#""once_per_load": true"#, #""setup_tags": ["list", ["tag", 0, 1]]"#]
            )
            #expect(Self.calls(container, times: 3) == [["S", "M"], ["M"], ["M"]])
        }

        // gtm.js: onceSetupFailed → [[S], []] (a once-only tag keeps the failure of its one call)
        @Test func aOncePerPageSetupThatFailedKeepsBlockingItsTag() throws {
            let container = try Self.container(
                ["S", "M"],
                [#""once_per_load": true"#, #""setup_tags": ["list", ["tag", 0, 1]]"#]
            )
            #expect(Self.calls(container, times: 2, failing: ["S"]) == [["S"], []])
        }

        // gtm.js: onceMainRerunsSequence → [[S, M, T], [S, T], [S, T]]
        @Test func aOncePerPageTagTriggeredAgainRunsItsSetupAndTeardownAgain() throws {
            let container = try Self.container(
                ["S", "M", "T"],
                [
                    "",
                    #""once_per_load": true, "setup_tags": ["list", ["tag", 0, 0]], "teardown_tags": ["list", ["tag", 2, 0]]"#,
                    "",
                ]
            )
            #expect(Self.calls(container, times: 3) == [["S", "M", "T"], ["S", "T"], ["S", "T"]])
        }

        // gtm.js: onceMainOnceSetup → [[S, M, T], [T]]
        @Test func aOnceOnlySetupOfAOncePerPageTagDoesNotRunAgain() throws {
            let container = try Self.container(
                ["S", "M", "T"],
                [
                    #""once_per_load": true"#,
                    #""once_per_load": true, "setup_tags": ["list", ["tag", 0, 0]], "teardown_tags": ["list", ["tag", 2, 0]]"#,
                    "",
                ]
            )
            #expect(Self.calls(container, times: 2) == [["S", "M", "T"], ["T"]])
        }

        // gtm.js: onceMainAfterFlakySetup → [[S], [S, M], [S]] (the once-only tag had not run yet)
        @Test func aOncePerPageTagWhoseSetupFailedFiresOnceItsSetupSucceeds() throws {
            let container = try Self.container(
                ["S", "M"],
                ["", #""once_per_load": true, "setup_tags": ["list", ["tag", 0, 1]]"#]
            )
            #expect(Self.calls(container, times: 3, flaky: ["S"]) == [["S"], ["S", "M"], ["S"]])
        }

        // gtm.js: failedMainTeardown → [[M, T]]; failedMainTeardownStop → [[M]]
        @Test func aFailedTagRunsItsTeardownUnlessTheTeardownStopsOnFailure() throws {
            let runs = try Self.container(["M", "T"], [#""teardown_tags": ["list", ["tag", 1, 0]]"#, ""], main: 0)
            #expect(Self.calls(runs, times: 1, failing: ["M"]) == [["M", "T"]])
            let stops = try Self.container(["M", "T"], [#""teardown_tags": ["list", ["tag", 1, 2]]"#, ""], main: 0)
            #expect(Self.calls(stops, times: 1, failing: ["M"]) == [["M"]])
        }

        // gtm.js: teardownOutcomeIsTheSequences → [[M, T, U]]: the teardown's success is the sequence's.
        @Test func theTeardownsOutcomeIsTheOutcomeOfTheSequence() throws {
            let container = try Self.container(
                ["M", "T", "U"],
                [#""teardown_tags": ["list", ["tag", 1, 0]]"#, "", #""setup_tags": ["list", ["tag", 0, 1]]"#],
                main: 2
            )
            #expect(Self.calls(container, times: 1, failing: ["M"]) == [["M", "T", "U"]])
        }

        /// Point 3: a custom HTML setup tag would run in a browser; here it counts as succeeded, and it is still
        /// reported unsupported.
        @Test func aSetupTagContainerKitCannotRunCountsAsSucceeded() throws {
            let container = try Self.container(["html", "M"], ["", #""setup_tags": ["list", ["tag", 0, 1]]"#])
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            manager.register(tagHandler: RecordingHandler(), for: "M")
            let fired = manager.makeDataLayer().push(event: "e").fired
            #expect(fired.map(\.status) == [.unsupported, .ok])
            #expect(fired.last?.classPath == "M")
        }

        /// The outcome of a once-only tag's one call is session state: a session restored from its snapshot
        /// keeps a failed once-per-load setup failed, and a succeeded one succeeded.
        @Test func aOnceOnlyOutcomeSurvivesTheSessionSnapshot() throws {
            let container = try Self.container(
                ["S", "M"],
                [#""once_per_load": true"#, #""setup_tags": ["list", ["tag", 0, 1]]"#]
            )
            for (failing, expected) in [(Set(["S"]), [String]()), ([], ["M"])] {
                var snapshot: SessionSnapshot?
                _ = Self.calls(container, times: 1, failing: failing) { manager in
                    let layer = manager.makeDataLayer()
                    layer.push(event: "e")
                    snapshot = layer.snapshot()
                    return layer
                }
                let restored = try #require(snapshot)
                let again = Self.calls(container, times: 1) { $0.restoreDataLayer(from: restored) }
                #expect(again == [expected])
            }
        }
    }
}
