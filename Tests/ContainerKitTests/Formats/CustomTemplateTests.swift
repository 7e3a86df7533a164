import ContainerKit
import ContainerKitTesting
import Testing

/// Tags and variables made from custom templates (`cvt_<container id>_<template id>`) run sandboxed JavaScript, which
/// ContainerKit does not run: they are reported by the template's name where the export gives it.
struct CustomTemplateTests {
    @Test func anExportsCustomTemplatesAreReportedByName() throws {
        let container = try TestContainers.load(
            json: """
                {"exportFormatVersion": 2, "containerVersion": {
                  "container": {"publicId": "GTM-CVT1", "usageContext": ["WEB"]},
                  "tag": [
                    {"tagId": "1", "name": "Pixel", "type": "cvt_12345_6", "firingTriggerId": ["2147479553"]},
                    {"tagId": "2", "name": "Pixel again", "type": "cvt_12345_6", "firingTriggerId": ["2147479553"]}],
                  "variable": [{"variableId": "3", "name": "Unnamed", "type": "cvt_12345_7"}],
                  "customTemplate": [
                    {"accountId": "1", "containerId": "12345", "templateId": "6", "name": "Facebook Pixel"},
                    {"accountId": "1", "containerId": "99", "templateId": "7", "name": "Another container's"}]}}
                """
        )
        #expect(
            Set(container.unsupported.map(\.message)) == [
                "variable type '__cvt_12345_7' (a custom template: sandboxed JavaScript) is not supported",
                "tag type '__cvt_12345_6' (the custom template 'Facebook Pixel': sandboxed JavaScript) is not supported "
                    + "(2 times)",
            ]
        )
    }

    /// A compiled container (gtm.js) keeps no template names.
    @Test func aCompiledCustomTemplateIsReportedAsOne() throws {
        let container = try TestContainers.load(
            json: """
                {"resource": {"version": "1", "macros": [{"function": "__e"}],
                  "tags": [{"function": "__cvt_12345_6", "tag_id": 1}],
                  "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"}],
                  "rules": [[["if", 0], ["add", 0]]]}, "runtime": []}
                """
        )
        #expect(
            container.unsupported.map(\.message) == [
                "tag type '__cvt_12345_6' (a custom template: sandboxed JavaScript) is not supported"
            ]
        )
    }
}
