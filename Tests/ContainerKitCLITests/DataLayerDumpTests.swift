import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `run`, `preview` and `diff` read a data-layer dump — `copy(JSON.stringify(dataLayer))` in a browser's console, one
/// JSON array of pushes on one line or over many — as the same pushes one a line. gtag's `arguments` objects in it
/// (`{"0": "consent", "1": "default", …}`) are commands.
struct DataLayerDumpTests {
    /// Consent commands, then `e` twice: tag 1 needs `ad_storage`, tag 2 nothing (`ConsentInputTests`' container).
    static let lines = [
        #"["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]"#,
        #"{"event": "e", "message_id": "m-1"}"#,
        #"["consent", "update", {"ad_storage": "granted"}]"#,
        #"{"event": "e", "page": {"path": "/cart"}}"#,
        #"{"event": "e", "message_id": "m-1"}"#,
    ]

    /// The same pushes as a browser's console copies them: gtag's commands are `arguments` objects.
    static let dump = """
        [{"0":"consent","1":"default","2":{"ad_storage":"denied","region":["ES"]}},{"event":"e","message_id":"m-1"},\
        {"0":"consent","1":"update","2":{"ad_storage":"granted"}},{"event":"e","page":{"path":"/cart"}},\
        {"event":"e","message_id":"m-1"}]
        """

    /// `JSON.stringify(dataLayer, null, 2)`, after a blank line: one item over several lines.
    static let prettyDump = """

        [
          ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}],
          {"event": "e", "message_id": "m-1"},
          {"0": "consent", "1": "update", "2": {"ad_storage": "granted"}},
          {
            "event": "e",
            "page": {"path": "/cart"}
          },
          {"event": "e", "message_id": "m-1"}
        ]

        """

    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    /// The container and each events text as a file of its own, by name.
    func files(_ events: [String: String]) throws -> (container: String, events: [String: String]) {
        var contents = ["GTM-K1T5.json": ConsentInputTests.container]
        for (name, text) in events { contents[name] = Array(text.utf8) }
        let directory = try Fixtures.directory(contents)
        return (
            directory + "/GTM-K1T5.json",
            Dictionary(uniqueKeysWithValues: events.keys.map { ($0, directory + "/" + $0) })
        )
    }

    func read(_ text: String, limit: Int = LineReader.maximumLineLength) throws -> [PushInput.Line] {
        let directory = try Fixtures.directory(["events": Array(text.utf8)])
        let handle = try #require(FileHandle(forReadingAtPath: directory + "/events"))
        defer { try? handle.close() }
        var input = PushInput(handle: handle, ownsHandle: false)
        input.maximumLineLength = limit
        return Array(input)
    }

    @Test func aDumpOnOneLineOrOverManyRunsAsTheSamePushesOneALine() async throws {
        let (container, events) = try files([
            "lines.jsonl": Self.lines.joined(separator: "\n"), "dump.json": Self.dump, "pretty.json": Self.prettyDump,
        ])
        var outputs: [String: [ValueMap]] = [:]
        for (name, path) in events {
            let result = await run([
                "run", container, "--events", path, "--format", "json", "--context", "country=ES", "--log-level",
                "error",
            ])
            #expect(result.code == 0, "\(name): \(result.err)")
            #expect(result.err.isEmpty, "\(name)")
            // The clock's time of the original push, which a duplicate's answer shows, is the one thing that differs.
            outputs[name] = try result.out.split(separator: "\n").map { line in
                var object = try #require(try Value(json: String(line)).objectValue)
                object["original_time"] = nil
                return object
            }
        }
        let fired = outputs["lines.jsonl", default: []].compactMap { line in
            line["fired"]?.arrayValue?.compactMap { $0.objectValue?["status"]?.stringValue }
        }
        // Denied in Spain: tag 1 blocked; granted: both run; the third `e` repeats the first's ID, a duplicate.
        #expect(
            fired == [
                ["blocked_by_consent", "unhandled"], ["unhandled", "unhandled"], ["blocked_by_consent", "unhandled"],
            ]
        )
        #expect(outputs["lines.jsonl", default: []].last?["duplicate"] == true)
        #expect(outputs["dump.json"] == outputs["lines.jsonl"])
        #expect(outputs["pretty.json"] == outputs["lines.jsonl"])
    }

    @Test func aDumpsPushesAreNamedByTheirIndexAndLine() async throws {
        let (container, events) = try files(["pretty.json": Self.prettyDump])
        let result = await run([
            "run", container, "--events", events["pretty.json"] ?? "", "--context", "country=ES", "--log-level",
            "error",
        ])
        #expect(result.code == 0)
        let titles = result.out.split(separator: "\n").filter { $0.hasPrefix("dataLayer[") }
        #expect(
            titles == [
                #"dataLayer[0] (line 3): gtag consent default {"ad_storage":"denied","region":["ES"]}"#,
                #"dataLayer[1] (line 4): event "e""#,
                #"dataLayer[2] (line 5): gtag consent update {"ad_storage":"granted"}"#,
                #"dataLayer[3] (line 6): event "e""#,
                #"dataLayer[4] (line 10): event "e""#,
            ]
        )
    }

    /// Each item stands alone: one that is not a push is refused where it is, and the others run.
    @Test func anItemThatIsNotAPushIsRefusedWithItsIndexAndPlaceAndTheOthersRun() async throws {
        let dump = """
            [{"event": "e"}, 7,
             {"0": 5, "1": "e"}, {"event": "e", "message_id": ""}, {"event": "e"},
             null]
            """
        let (container, events) = try files(["dump.json": dump])
        let path = events["dump.json"] ?? ""
        let result = await run(["run", container, "--events", path, "--format", "json", "--log-level", "error"])
        #expect(result.code == ExitCode.failedInput)
        let lines = try result.out.split(separator: "\n").map { try #require(try Value(json: String($0)).objectValue) }
        #expect(lines.count == 6)
        #expect(lines[0]["fired"]?.arrayValue?.count == 2)
        #expect(lines[1]["index"] == 1 && lines[1]["line"] == 1)
        #expect(lines[1]["error"]?.objectValue?["code"] == "not_an_object")
        #expect(lines[1]["error"]?.objectValue?["column"] == 18)
        #expect(lines[2]["index"] == 2 && lines[2]["line"] == 2)
        #expect(lines[2]["error"]?.objectValue?["code"] == "invalid_command")
        #expect(lines[3]["index"] == 3 && lines[3]["line"] == 2)
        #expect(lines[3]["error"]?.objectValue?["code"] == "invalid_event_id")
        #expect(lines[3]["error"]?.objectValue?["column"] == 51)
        #expect(lines[4]["fired"]?.arrayValue?.count == 2)
        #expect(lines[5]["index"] == 5 && lines[5]["line"] == 3)
        #expect(
            lines[5]["error"]?.objectValue?["message"]
                == "a push must be a JSON object (or a gtag command, a JSON array), not null (a function pushed onto the data layer, which JSON.stringify writes so)"
        )
        #expect(
            result.err.split(separator: "\n").first
                == "containerkit run: dataLayer[1] at line 1:18: a push must be a JSON object (or a gtag command, a JSON array), not number"
        )
    }

    /// An item that is not JSON is refused where it breaks; the items around it are read.
    @Test func anItemThatIsNotJSONIsRefusedWhereItBreaksAndTheOthersAreRead() throws {
        let read = try read("\n[{\"event\": \"a\"},\n {\"event\": \"b\",,}, {\"event\": \"c\"}]\n")
        try #require(read.count == 3)
        guard case .push(PushInput.Place(line: 2, index: 0), let first, nil, nil, nil) = read[0],
            case .invalid(PushInput.Place(line: 3, index: 1), let problem) = read[1],
            case .push(PushInput.Place(line: 3, index: 2), let last, nil, nil, nil) = read[2]
        else {
            Issue.record("read as \(read)")
            return
        }
        #expect(first["event"] == "a" && last["event"] == "c")
        #expect(problem.code == "syntax_error")
        #expect(problem.line == 3 && problem.column == 16)
        #expect(problem.description.hasPrefix("dataLayer[1] at line 3:16: "))
    }

    /// Where the array itself breaks, the items before are read, and the error says where and that the rest was not.
    @Test(arguments: [
        (#"[{"event": "a"} {"event": "b"}]"#, "line 1:17: expected ',' or ']' after dataLayer[0]"),
        ("[{\"event\": \"a\"},\n", "line 2:1: the data-layer dump ends before its closing ']'"),
        (
            #"[{"event": "a"}, {"event": "#,
            "line 1:28: the data-layer dump ends inside dataLayer[1], before its closing ']'"
        ),
        (#"[{"event": "a"}] {"event": "b"}"#, "line 1:18: unexpected text after the data-layer dump's closing ']'"),
        (#"[{"event": "a"},, {"event": "b"}]"#, "line 1:17: expected a push before ','"),
        (#"[{"event": "a"},]"#, "line 1:17: expected a push after ',', found ']'"),
    ])
    func aBrokenArrayIsRefusedWhereItBreaksAfterTheItemsBeforeIt(dump: String, said: String) throws {
        let read = try read(dump)
        try #require(read.count == 2)
        guard case .push(_, let first, nil, nil, nil) = read[0], case .invalid(_, let problem) = read[1] else {
            Issue.record("read as \(read)")
            return
        }
        #expect(first["event"] == "a")
        #expect(problem.code == "syntax_error")
        #expect(problem.description == said + "; the rest of the data-layer dump (a JSON array of pushes) was not read")
    }

    /// The limit is a push's, not the dump's: a dump on one line longer than any line may be is read item by item, and
    /// only an item over the limit is refused.
    @Test func aDumpIsReadItemByItemAndOnlyAnItemOverTheLimitIsRefused() throws {
        let items = (0..<10).map { #"{"event": "e\#($0)"}"# }
        let long = #"{"event": "long", "padding": ""# + String(repeating: "x", count: 200) + #""}"#
        let read = try read("[" + (items[..<5] + [long] + items[5...]).joined(separator: ",") + "]", limit: 100)
        try #require(read.count == 11)
        let events = read.compactMap { line -> String? in
            guard case .push(_, let message, _, _, _) = line else { return nil }
            return message["event"]?.stringValue
        }
        #expect(events == (0..<10).map { "e\($0)" })
        guard case .invalid(PushInput.Place(line: 1, index: 5), let problem) = read[5] else {
            Issue.record("read as \(read[5])")
            return
        }
        #expect(problem.code == "input_too_long")
        #expect(problem.column == 82)
    }

    /// Brackets, commas and quotes inside strings are text, not the array's: each item ends where its JSON does.
    @Test func bracketsCommasAndQuotesInsideStringsDoNotEndAnItem() throws {
        let read = try read(#"[{"event": "a", "t": "], [\"{,"}, {"event": "b", "path": "C:\\"}, "x\"]", 7]"#)
        let events = read.compactMap { line -> String? in
            guard case .push(_, let message, _, _, _) = line else { return nil }
            return message["event"]?.stringValue
        }
        #expect(events == ["a", "b"])
        try #require(read.count == 4)
        guard case .push(_, let first, _, _, _) = read[0], case .push(_, let second, _, _, _) = read[1] else { return }
        #expect(first["t"] == #"], ["{,"#)
        #expect(second["path"] == #"C:\"#)
        guard case .invalid(PushInput.Place(line: 1, index: 2), let string) = read[2],
            case .invalid(PushInput.Place(line: 1, index: 3), _) = read[3]
        else {
            Issue.record("read as \(read)")
            return
        }
        #expect(string.message.hasSuffix("not string"))
    }

    /// A dump from a pipe is read as it comes: an item is handed out once its bytes are there, before the rest of
    /// the array is written.
    @Test func aDumpFromAPipeIsHandedOutItemByItemAsItArrives() throws {
        let pipe = Pipe()
        let input = PushInput(handle: pipe.fileHandleForReading, ownsHandle: false)
        var items = input.makeIterator()
        try pipe.fileHandleForWriting.write(contentsOf: Data(#"[{"event": "a"}, {"ev"#.utf8))
        guard case .push(PushInput.Place(line: 1, index: 0), let first, nil, nil, nil)? = items.next() else {
            Issue.record("the first item is not handed out")
            return
        }
        #expect(first["event"] == "a")
        try pipe.fileHandleForWriting.write(contentsOf: Data(#"ent": "b"}]"#.utf8))
        try pipe.fileHandleForWriting.close()
        guard case .push(PushInput.Place(line: 1, index: 1), let second, nil, nil, nil)? = items.next() else {
            Issue.record("the second item is not handed out")
            return
        }
        #expect(second["event"] == "b")
        #expect(items.next() == nil)
    }

    /// However its bytes arrive (a pipe gives what is there), the splitter finds the same items.
    @Test func theSplitterFindsTheSameItemsWhereverItsInputIsCut() {
        let dump = Array(Self.prettyDump.utf8) + Array(#" "#.utf8)
        let whole = DataLayerDump.pieces(of: dump, limit: 1_000)
        #expect(whole.count == 5)
        for cut in 0...dump.count {
            #expect(DataLayerDump.pieces(of: dump, cutAt: cut, limit: 1_000) == whole, "cut at \(cut)")
        }
    }

    /// A line that is a gtag command is not a dump, and the lines after it are read one a line; a command written
    /// over several lines is one command.
    @Test func aCommandIsNotADumpOnOneLineOrOverMany() throws {
        let lines = try read(#"["consent", "update", {"ad_storage": "granted"}]"# + "\n" + #"{"event": "e"}"#)
        guard lines.count == 2, case .command(1, _, _) = lines[0], case .push(2, _, nil, nil, nil) = lines[1] else {
            Issue.record("read as \(lines)")
            return
        }
        let spread = try read("[\n  \"consent\",\n  \"update\",\n  {\"ad_storage\": \"granted\"}\n]\n")
        guard spread.count == 1, case .command(1, let command, _) = spread[0] else {
            Issue.record("read as \(spread)")
            return
        }
        #expect(command.kind == .update)
    }

    /// A page that uses gtag.js pushes its Google tag's commands (`js`, `config`) first: they are shown as skipped, set
    /// nothing and are no error.
    @Test func theGoogleTagsCommandsOfAGtagPageAreSkippedNotRefused() async throws {
        let dump = """
            [{"0":"js","1":"2026-11-28T10:00:00.000Z"},{"0":"config","1":"G-1","2":{"send_page_view":false}},\
            {"event":"gtm.js","gtm.start":1},{"0":"consent","1":"default","2":{"ad_storage":"denied"}},\
            {"event":"e"},{"0":"get","1":"G-1","2":"client_id"}]
            """
        let (container, events) = try files(["page.json": dump])
        let path = events["page.json"] ?? ""
        let json = await run(["run", container, "--events", path, "--format", "json", "--explain"])
        #expect(json.code == ExitCode.success)
        #expect(!json.err.contains("containerkit run:"))  // no line is refused
        let lines = try json.out.split(separator: "\n").map { try #require(try Value(json: String($0)).objectValue) }
        try #require(lines.count == 6)
        #expect(lines[0]["command"] == ["js", "2026-11-28T10:00:00.000Z"])
        #expect(lines[0]["skipped"]?.stringValue?.hasPrefix("gtag command 'js' sets the Google tag up") == true)
        #expect(lines[1]["command"] == ["config", "G-1", ["send_page_view": false]])
        #expect(lines[1]["skipped"] != nil && lines[5]["skipped"] != nil)
        // Nothing of the skipped commands reached the data layer: the event's trace shows the model without them.
        let trace = try PushTrace(json: JSONWriter.string(.object(lines[4])))
        #expect(Set(trace.dataLayer.objectValue?.keys ?? []) == ["event", "gtm"])
        #expect(trace.tags.first { $0.outcome == .blockedByConsent } != nil)

        let text = await run(["run", container, "--events", path])
        #expect(text.code == ExitCode.success)
        #expect(text.out.contains("dataLayer[1] (line 1): gtag config G-1 {\"send_page_view\":false}\n  skipped: "))
        let preview = await run([
            "preview", "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_auth=a&gtm_preview=1",
            "--drafts", URL(fileURLWithPath: container).deletingLastPathComponent().path, "--events", path,
        ])
        #expect(preview.code == ExitCode.success)
        #expect(preview.out.contains("dataLayer[0] (line 1): gtag js 2026-11-28T10:00:00.000Z\n  skipped: "))
    }

    /// A web container (`permissions`: a served script's data) whose tag fires on `purchase` with the gtag event's
    /// `transaction_id`, read from `eventModel`.
    static let webContainer = Array(
        """
        {"resource": {"version": "1",
          "macros": [{"function": "__e"},
            {"function": "__v", "vtp_name": "eventModel.transaction_id", "vtp_dataLayerVersion": 2}],
          "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "purchase",
                    "vtp_functionArgument": ["list", ["map", "key", "transaction", "value", ["macro", 1]]]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "purchase"}],
          "rules": [[["if", 0], ["add", 0]]]},
         "permissions": {}}
        """.utf8
    )

    /// A GA4 page's dump: gtag's `event` commands are `{event, eventModel}` pushes, as gtm.js makes them, a `set` sets
    /// its keys, and one gtm.js ignores (four arguments) is skipped.
    @Test func aGtagEventInADumpFiresWithItsParametersUnderEventModel() async throws {
        let dump = """
            [{"gtm.start":1,"event":"gtm.js"},{"0":"event","1":"purchase","2":{"transaction_id":"T1","value":5}},\
            {"event":"purchase"},{"0":"set","1":{"user_id":"u1"}},\
            {"0":"event","1":"purchase","2":{"transaction_id":"T2"},"3":{}}]
            """
        let directory = try Fixtures.directory(["GTM-WEBG1.json": Self.webContainer, "dump.json": Array(dump.utf8)])
        let result = await run([
            "run", directory + "/GTM-WEBG1.json", "--events", directory + "/dump.json", "--format", "json",
            "--log-level", "error",
        ])
        #expect(result.code == ExitCode.success, "\(result.err)")
        let lines = try result.out.split(separator: "\n").map { try #require(try Value(json: String($0)).objectValue) }
        try #require(lines.count == 5)
        let fired = lines[1]["fired"]?.arrayValue?.first?.objectValue
        #expect(lines[1]["event"] == "purchase")
        #expect(fired?["parameters"] == ["transaction": "T1"])
        // The next message does not see the gtag event's parameters.
        #expect(lines[2]["fired"]?.arrayValue?.first?.objectValue?["parameters"] == [:])
        #expect(lines[3]["event"] == .null && lines[3]["fired"] == [])
        #expect(lines[4]["skipped"]?.stringValue?.hasPrefix("gtm.js ignores a gtag event with 4 arguments") == true)
    }

    /// An `arguments` object is a command on a line of its own too; an object with other keys is a push.
    @Test func anArgumentsObjectIsACommandAndOtherNumberedKeysAreAPush() throws {
        let lines = try read(
            #"{"0": "consent", "1": "update", "2": {"ad_storage": "granted"}}"# + "\n" + #"{"0": "a", "2": "b"}"#
        )
        guard lines.count == 2, case .command(1, let command, let arguments) = lines[0],
            case .push(2, let message, nil, nil, nil) = lines[1]
        else {
            Issue.record("read as \(lines)")
            return
        }
        #expect(command.kind == .update)
        #expect(arguments.count == 3)
        #expect(message.keys == ["0", "2"])
    }
}
