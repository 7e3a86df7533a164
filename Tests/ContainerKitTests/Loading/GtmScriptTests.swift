import ContainerKit
import Foundation
import Testing

/// Whole `gtm.js` files: the container data is the object of `var data = {…};` inside JavaScript.
struct GtmScriptTests {
    /// A gtm.js-shaped script whose decoys (in comments, strings, a regex and a template) must be skipped.
    static func script(data: String) -> String {
        """
        // Copyright 2012 Google Inc. All rights reserved.
        /* var data = {"decoy": "in a block comment"}; */
        (function(){
        var notData = "var data = {\\"decoy\\": 1}; } {";
        var pattern = /var data = \\{"x"\\}/g, half = 10 / 2;
        var quoted = 'it\\'s } { here', tpl = `var data = {${"}"}}`;
        var data = \(data);
        var ba, ca = function(a) { return a ? { b: 1 } : /}/.test(a); };
        if (ca) { var data2 = {"later": true}; }
        })();
        """
    }

    static let data = """
        {
        "resource": {
          "version": "12",
          "macros": [{"function": "__e"}, {"function": "__v", "vtp_name": "page", "vtp_dataLayerVersion": 2}],
          "tags": [{"function": "__html", "tag_id": 1, "vtp_html": "<script>var data = {};</script>"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"}],
          "rules": [[["if", 0], ["add", 0]]]
        },
        "runtime": [[50, "__html", [46, "a"], [36, [15, "a"]]]]
        }
        """

    @Test func loadsTheDataObjectOfAWholeGtmJsFile() throws {
        let container = try TestContainers.load(json: Self.script(data: Self.data), file: "GTM-SCRIPT1/gtm.js")
        #expect(container.format == .compiledResource)
        #expect(container.version == "12")
        #expect(container.counts.macros == 2)
        #expect(container.counts.tags == 1)
        #expect(container.platform == .web)
    }

    @Test func positionsInTheDataObjectAreRelativeToTheFile() throws {
        let text = Self.script(data: Self.data)
        let document = try ContainerLoader(options: LoadOptions(recordPositions: true))
            .readDocument(bytes: Array(text.utf8), file: "gtm.js")
        // `var data = {` is line 7; "version" is on line 9, its value at column 14.
        #expect(document.location(of: "")?.description == "7:12")
        #expect(document.location(of: "/resource/version")?.description == "9:14")
        let scanned = try ContainerLoader().readDocument(bytes: Array(text.utf8), file: "gtm.js")
        #expect(scanned.locate("/resource/version")?.description == "9:14")
    }

    @Test func aSyntaxErrorInTheDataIsReportedAtItsLineInTheFile() throws {
        let broken = Self.data.replacingOccurrences(of: #""version": "12","#, with: #""version": "12",,"#)
        do {
            _ = try ContainerLoader().load(bytes: Array(Self.script(data: broken).utf8), file: "gtm.js")
            Issue.record("the broken script loaded")
        } catch {
            #expect(error.code == .syntax)
            #expect(error.location?.line == 9)
            #expect(error.location?.column == 19)  // the second comma
        }
    }

    @Test func aDanglingReferenceIsLocatedInTheFile() throws {
        let dangling = Self.data.replacingOccurrences(of: #"["add", 0]"#, with: #"["add", 7]"#)
        do {
            _ = try ContainerLoader().load(bytes: Array(Self.script(data: dangling).utf8), file: "gtm.js")
            Issue.record("the script loaded")
        } catch {
            #expect(error.code == .danglingReference)
            #expect(error.location?.line == 13)  // the rules line
        }
    }

    @Test func aMisreadQuoteOnAnEarlierLineDoesNotHideTheData() throws {
        // `/'/` after `)` reads as division, so `'` looks like an open string: it ends at the line end.
        let text = """
            // x
            if (a) /'/.test(b);
            var data = {"resource": {"version": "4"}};
            """
        let container = try TestContainers.load(json: text, file: "gtm.js")
        #expect(container.version == "4")
    }

    @Test func aScriptWithoutDataIsNotAContainer() throws {
        let text = "// just code\n(function(){ var x = {\"a\": 1}; })();\n"
        do {
            _ = try ContainerLoader().load(bytes: Array(text.utf8), file: "other.js")
            Issue.record("a script without data loaded")
        } catch {
            #expect(error.code == .syntax)
        }
    }

    @Test(.enabled(if: TestContainers.corpus != nil, "corpus not found; corpus script test skipped"))
    func corpusDataWrappedInAScriptLoadsLikeTheExtract() throws {
        for name in ["danialajz82__fixplus__gtm.js.data.json", "wubinyanjiao__yii2Cloud__gtm.js.data.json"] {
            let path = try #require(TestContainers.corpusFile("resource/" + name))
            let extract = try String(contentsOfFile: path, encoding: .utf8)
            let direct = try TestContainers.load(json: extract, file: "GTM-X1.json")
            let wrapped = try TestContainers.load(json: Self.script(data: extract), file: "GTM-X1.js")
            #expect(wrapped.counts == direct.counts)
            #expect(wrapped.version == direct.version)
        }
    }
}
