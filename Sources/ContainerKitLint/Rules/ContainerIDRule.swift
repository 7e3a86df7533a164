import ContainerKit

/// The container ID a file name carries against the one its content names.
struct ContainerIDRule: LintRule {
    static let description = RuleDescription(
        id: "file_name_container_id",
        name: "File Name and Container ID",
        description: "The file name's GTM-XXXX container ID differs from the content's, or neither names a valid one.",
        severity: .warning,
        triggeringExamples: [
            LintExample(
                #"{"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "GTM-BBBB"}, "#
                    + #""variable": [{"name": "A", "type": "c"}]}}"#,
                file: "GTM-AAAA.json"
            ),
            LintExample(
                #"{"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "gtm-lower"}, "#
                    + #""variable": [{"name": "A", "type": "c"}]}}"#,
                file: "export.json"
            ),
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "container.json"),
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "wGTM-TAG-export.json"),
        ],
        nonTriggeringExamples: [
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "GTM-5HM9ZRX.json"),
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "vendor__app__GTM-5HM9ZRX.json"),
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "com.example.app__GTM-ABC123.json"),
            LintExample(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: "my.app.GTM-ABC123.json"),
            LintExample(
                #"{"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "GTM-BBBB"}, "#
                    + #""variable": [{"name": "A", "type": "c"}]}}"#,
                file: "workspace-export.json"
            ),
            LintExample(
                "// gtm.js\n" + #"var data = {"resource": {"macros": [{"function": "__e"}]}};"# + "\n"
                    + #"var ca = {ctid: "GTM-K1T5", canonicalContainerId: "1"};"#,
                file: "gtm.js"
            ),
            // A 2025 script names itself in its data's blob, pretty-printed or not.
            LintExample(
                "// gtm.js\nvar data = {\n  \"resource\": {\"macros\": [{\"function\": \"__e\"}]},\n"
                    + "  \"blob\": {\"5\": \"GTM-K1T5\"}\n};\n",
                file: "gtm.js"
            ),
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard input.document != nil, input.source.kind != .unknown else { return [] }
        let fileID =
            ContainerLoader.containerID(fromFileName: input.file)
            ?? ContainerCompiler.containerID(embeddedIn: input.file)
        let pointer = "/containerVersion/container/publicId"
        let name = input.file.split(separator: "/").last.map(String.init) ?? input.file
        if let contentID = input.source.publicID {
            guard ContainerLoader.isContainerID(contentID) else {
                return [
                    input.finding(
                        Self.description,
                        "container id '\(contentID)' does not follow 'GTM-XXXX'",
                        at: pointer
                    )
                ]
            }
            if let fileID, fileID != contentID {
                let message = "file name '\(name)' says '\(fileID)' but the container's publicId is '\(contentID)'"
                return [input.finding(Self.description, message, at: pointer)]
            }
            return []
        }
        guard fileID == nil, input.document?.scriptContainerID == nil else { return [] }
        // A served script of 2025 or later keeps its ID in its data's blob, where the compiler reads it.
        if case .object(let root)? = input.document?.value, ContainerCompiler.blobContainerID(root) != nil {
            return []
        }
        // The name it expects keeps the file's own extension (a property list is `GTM-XXXX.plist`).
        let expected = name.hasSuffix(".plist") ? "GTM-XXXX.plist" : "GTM-XXXX.json"
        let message =
            "no container id in file name '\(name)' (expected \(expected)) nor in the content, "
            + "so the runtime calls it 'GTM-UNKNOWN'"
        return [input.finding(Self.description, message, at: "")]
    }
}
