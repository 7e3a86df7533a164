import ContainerKit
import Foundation
import Testing

extension Loading {
    /// Integer fields of a container that held a number outside ±2^63 stopped the process (`Int(1e19)`
    /// traps): each is now a `ContainerError` that points at the value.
    @Suite struct OutOfRangeNumberTests {
        static func resource(tag: String, tags: String = "") -> String {
            #"""
            {"resource": {"version": "1", "macros": [{"function": "__e"}],
              "tags": [\#(tag)\#(tags)],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}],
              "rules": [[["if", 0], ["add", 0]]]}}
            """#
        }

        static let cases: [(String, String, String)] = [
            (
                "tag id 1e19", resource(tag: #"{"function": "__funct", "tag_id": 1e19, "vtp_classPath": "A"}"#),
                "/resource/tags/0/tag_id"
            ),
            (
                "tag id -1e19", resource(tag: #"{"function": "__funct", "tag_id": -1e19, "vtp_classPath": "A"}"#),
                "/resource/tags/0/tag_id"
            ),
            (
                "tag id '1e19'", resource(tag: #"{"function": "__funct", "tag_id": "1e19", "vtp_classPath": "A"}"#),
                "/resource/tags/0/tag_id"
            ),
            (
                "escape code 1e19",
                resource(tag: #"{"function": "__funct", "tag_id": 1, "vtp_classPath": ["escape", "A", 12, 1e19]}"#),
                "/resource/tags/0/vtp_classPath/3"
            ),
            (
                "tag reference flag 1e19 in setup_tags",
                resource(
                    tag:
                        #"{"function": "__funct", "tag_id": 1, "vtp_classPath": "A", "setup_tags": ["list", ["tag", 1, 1e19]]}"#,
                    tags: #", {"function": "__funct", "tag_id": 2, "vtp_classPath": "B"}"#
                ),
                "/resource/tags/0/setup_tags/1/2"
            ),
            (
                "export tagId 1e19",
                #"""
                {"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "GTM-T1", "usageContext": ["ANDROID"]},
                  "tag": [{"tagId": "1e19", "name": "t", "type": "funct", "parameter": [
                    {"type": "TEMPLATE", "key": "classPath", "value": "A"}]}]}}
                """#,
                "/containerVersion/tag/0/tagId"
            ),
        ]

        @Test(arguments: cases)
        func anIntegerFieldOutsideTheRangeOfAnIntegerIsAnErrorAtTheValue(
            _ name: String,
            text: String,
            pointer: String
        ) throws {
            do {
                let container = try ContainerLoader().load(bytes: Array(text.utf8), file: "GTM-T1.json")
                Issue.record("\(name): loaded \(container.id) instead of refusing it")
            } catch {
                #expect(error.code == .invalidStructure, "\(name)")
                #expect(error.pointer == pointer, "\(name)")
                #expect(error.location != nil, "\(name)")
                #expect(error.message.contains("whole number"), "\(name): \(error.message)")
            }
        }

        @Test func integerFieldsWithinRangeStillLoad() throws {
            let text = Self.resource(
                tag: #"{"function": "__funct", "tag_id": 9007199254740991, "vtp_classPath": ["escape", "A", 12]}"#
            )
            let container = try ContainerLoader().load(bytes: Array(text.utf8), file: "GTM-T1.json")
            #expect(container.program.tags.first?.tagID == 9_007_199_254_740_991)
        }
    }
}
