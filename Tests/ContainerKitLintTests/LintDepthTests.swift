import ContainerKit
import ContainerKitBrazeLint
import ContainerKitLint
import Testing

private func lint(_ json: String, file: String = "GTM-DEPTH1.json") -> [LintFinding] {
    Linter(catalog: Linter.allRules).lint(bytes: Array(json.utf8), file: file)
}

/// Unused variables of compiled gtm.js resources, which have no names: reported by index and pointer.
struct UnnamedUnusedVariableTests {
    static let script = """
        // gtm.js
        (function(){
        var data = {"resource": {"version": "3",
          "macros": [{"function": "__e"},
                     {"function": "__v", "vtp_name": "cart.total", "vtp_dataLayerVersion": 2},
                     {"function": "__v", "vtp_name": "gtm.element", "vtp_dataLayerVersion": 1},
                     {"function": "__aev", "vtp_varType": "TEXT"},
                     {"function": "__u", "vtp_component": "URL"},
                     {"function": "__u", "vtp_component": "QUERY", "vtp_queryKey": "utm_source"},
                     {"function": "__v", "vtp_name": "user.id", "vtp_dataLayerVersion": 2}],
          "tags": [{"function": "__html", "tag_id": 1, "vtp_html": ["template", "<b>", ["macro", 6], "</b>"]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"}],
          "rules": [[["if", 0], ["add", 0]]]}};
        })();
        """

    @Test func unusedUnnamedVariablesAreReportedByIndexAndPointer() throws {
        let findings = lint(Self.script, file: "GTM-DEPTH1.js").filter { $0.ruleID == "unused_variable" }
        #expect(findings.map(\.pointer) == ["/resource/macros/1", "/resource/macros/5"])
        #expect(findings.first?.message == "variable macro 1 ('__v') is not used by any tag, trigger or variable")
        #expect(findings.first?.location?.line == 5)
    }
}

/// `tag_never_fires` compares the conditions of firing and blocking triggers, not only their ids.
struct BlockingImplicationTests {
    /// A condition of an export trigger.
    static func condition(_ type: String, _ arg0: String, _ arg1: String, negate: Bool = false) -> String {
        """
        {"type": "\(type)", "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "\(arg0)"},
          {"type": "TEMPLATE", "key": "arg1", "value": "\(arg1)"},
          {"type": "BOOLEAN", "key": "negate", "value": "\(negate)"}]}
        """
    }

    static func export(firing: [String], blocking: [String], firingFilters: [String] = []) -> String {
        """
        {"exportFormatVersion": 2, "containerVersion": {
          "variable": [{"name": "Tier", "type": "v", "parameter": [{"type": "TEMPLATE", "key": "name", "value": "tier"}]}],
          "tag": [{"tagId": "1", "name": "Reward", "type": "funct", "firingTriggerId": ["5"], "blockingTriggerId": ["6"],
            "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "A"},
              {"type": "LIST", "key": "functionArgument", "list": [{"type": "MAP", "map": [
                {"type": "TEMPLATE", "key": "key", "value": "tier"}, {"type": "TEMPLATE", "key": "value", "value": "{{Tier}}"}]}]}]}],
          "trigger": [
            {"triggerId": "5", "name": "Fire", "type": "CUSTOM_EVENT", "customEventFilter": [\(firing.joined(separator: ","))],
             "filter": [\(firingFilters.joined(separator: ","))]},
            {"triggerId": "6", "name": "Block", "type": "CUSTOM_EVENT", "customEventFilter": [\(blocking.joined(separator: ","))]}]}}
        """
    }

    static func neverFires(_ json: String) -> [String] {
        lint(json).filter { $0.ruleID == "tag_never_fires" }.map(\.message)
    }

    @Test func sameEventNameInBothTriggersIsReported() {
        let purchase = Self.condition("EQUALS", "{{_event}}", "purchase")
        let messages = Self.neverFires(Self.export(firing: [purchase], blocking: [purchase]))
        #expect(
            messages == [
                "tag 'Reward' never fires: whenever trigger 'Fire' fires it, trigger 'Block' blocks it "
                    + "(its conditions imply the blocking ones)"
            ]
        )
    }

    @Test func blockingConditionsThatAreASubsetAreImplied() {
        let purchase = Self.condition("EQUALS", "{{_event}}", "purchase")
        let gold = Self.condition("EQUALS", "{{Tier}}", "gold")
        #expect(
            Self.neverFires(Self.export(firing: [purchase], blocking: [purchase], firingFilters: [gold])).count == 1
        )
        // The other way round the block needs more than the firing trigger guarantees.
        #expect(Self.neverFires(Self.export(firing: [purchase], blocking: [purchase, gold])).isEmpty)
    }

    @Test func anEqualityImpliesTheStringAndRegexTestsItPasses() {
        let purchase = Self.condition("EQUALS", "{{_event}}", "purchase")
        for blocking in [
            Self.condition("STARTS_WITH", "{{_event}}", "purch"), Self.condition("CONTAINS", "{{_event}}", "chas"),
            Self.condition("MATCH_REGEX", "{{_event}}", "^p.*e$"),
            Self.condition("CONTAINS", "{{_event}}", "refund", negate: true),
        ] {
            #expect(Self.neverFires(Self.export(firing: [purchase], blocking: [blocking])).count == 1)
        }
        for blocking in [
            Self.condition("STARTS_WITH", "{{_event}}", "refund"), Self.condition("EQUALS", "{{_event}}", "PURCHASE"),
            Self.condition("CONTAINS", "{{_event}}", "chas", negate: true),
        ] {
            #expect(Self.neverFires(Self.export(firing: [purchase], blocking: [blocking])).isEmpty)
        }
    }

    @Test func negationMustMatch() {
        let purchase = Self.condition("EQUALS", "{{_event}}", "purchase")
        let notGold = Self.condition("EQUALS", "{{Tier}}", "gold", negate: true)
        let gold = Self.condition("EQUALS", "{{Tier}}", "gold")
        #expect(Self.neverFires(Self.export(firing: [purchase, notGold], blocking: [notGold])).count == 1)
        #expect(Self.neverFires(Self.export(firing: [purchase, notGold], blocking: [gold])).isEmpty)
    }

    @Test func compiledRulesWithUnlessAreComparedToo() {
        let json = """
            {"resource": {"macros": [{"function": "__e", "instance_name": "Event"},
                {"function": "__md", "instance_name": "Tier", "vtp_key": "tier", "vtp_eventType": "CUSTOM"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"},
                       {"function": "__funct", "tag_id": 2, "vtp_classPath": "B"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"},
                             {"function": "_eq", "arg0": ["macro", 1], "arg1": "trial"}],
              "rules": [[["if", 0], ["unless", 1], ["add", 0, 1]], [["unless", 1], ["block", 0]],
                        [["if", 1], ["block", 1]]]}}
            """
        let messages = Self.neverFires(json)
        #expect(messages.count == 1)
        #expect(messages.first?.hasPrefix("tag tag_id 1 ('__funct') never fires: whenever rule 0 fires it") == true)
    }
}

/// Braze and numeric-comparison checks see constant variables, lookup tables with constant inputs and
/// wholly constant templates, not only literals.
struct ConstantFoldingTests {
    static func brazeTag(actionType: String, macros: String, extra: String = "") -> String {
        """
        {"resource": {"macros": [{"function": "__e", "instance_name": "Event"}, \(macros)],
          "tags": [{"function": "__funct", "tag_id": 1, "instance_name": "Braze",
            "vtp_classPath": "com.appboy.googletagmanager.BrazeGtmTagProvider",
            "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", \(actionType)]\(extra)]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}],
          "rules": [[["if", 0], ["add", 0]]]}}
        """
    }

    static func braze(_ json: String) -> [String] {
        lint(json).filter { $0.ruleID == "braze_action" }.map(\.message)
    }

    @Test func actionTypeInAConstantVariableIsChecked() {
        let json = Self.brazeTag(
            actionType: #"["macro", 1]"#,
            macros: #"{"function": "__c", "instance_name": "Action", "vtp_value": "logEvnt"}"#
        )
        #expect(Self.braze(json).first?.contains("unknown actionType 'logEvnt'") == true)
        let missing = Self.brazeTag(
            actionType: #"["macro", 1]"#,
            macros: #"{"function": "__c", "instance_name": "Action", "vtp_value": "logEvent"}"#
        )
        #expect(
            Self.braze(missing) == [
                "braze tag 'Braze' with actionType 'logEvent' needs a non-empty 'eventName' argument (missing_parameter)"
            ]
        )
    }

    @Test func lookupTableWithAConstantInputAndATemplateAreFolded() {
        let macros = """
            {"function": "__c", "instance_name": "Mode", "vtp_value": "purchase"},
            {"function": "__smm", "instance_name": "Action", "vtp_input": ["macro", 1],
             "vtp_map": ["list", ["map", "key", "purchase", "value", "logPurchase"], ["map", "key", "x", "value", "y"]]},
            {"function": "__c", "instance_name": "Currency", "vtp_value": ""}
            """
        let json = Self.brazeTag(
            actionType: #"["macro", 2]"#,
            macros: macros,
            extra: #", ["map", "key", "productId", "value", ["template", "sku-", ["macro", 1]]], "#
                + #"["map", "key", "currency", "value", ["macro", 3]], ["map", "key", "price", "value", 9]"#
        )
        #expect(
            Self.braze(json) == [
                "braze tag 'Braze' with actionType 'logPurchase' needs a non-empty 'currency' argument (empty)"
            ]
        )
    }

    @Test func aVariableInputIsNotFolded() {
        let json = Self.brazeTag(
            actionType: #"["macro", 1]"#,
            macros: #"{"function": "__md", "instance_name": "Action", "vtp_key": "a", "vtp_eventType": "CUSTOM"}"#
        )
        #expect(Self.braze(json).isEmpty)
    }

    @Test func numericComparisonWithAConstantVariableIsChecked() {
        let json = """
            {"resource": {"macros": [{"function": "__md", "instance_name": "Price", "vtp_key": "price", "vtp_eventType": "CUSTOM"},
                {"function": "__c", "instance_name": "Threshold", "vtp_value": "ten"},
                {"function": "__c", "instance_name": "Limit", "vtp_value": "10"}],
              "predicates": [{"function": "_gt", "arg0": ["macro", 0], "arg1": ["macro", 1]},
                             {"function": "_lt", "arg0": ["macro", 0], "arg1": ["macro", 2]}]}}
            """
        let messages = lint(json).filter { $0.ruleID == "non_numeric_comparison" }.map(\.message)
        #expect(
            messages == [
                "condition '>' compares with 'ten' (the constant value of variable 'Threshold'), which is not a "
                    + "number, so it is never true"
            ]
        )
    }

    @Test func cyclesOfConstantsDoNotHang() {
        let json = """
            {"resource": {"macros": [{"function": "__md", "instance_name": "Price", "vtp_key": "price", "vtp_eventType": "CUSTOM"},
                {"function": "__c", "instance_name": "A", "vtp_value": ["macro", 2]},
                {"function": "__c", "instance_name": "B", "vtp_value": ["macro", 1]}],
              "predicates": [{"function": "_gt", "arg0": ["macro", 0], "arg1": ["macro", 1]}]}}
            """
        #expect(lint(json).filter { $0.ruleID == "non_numeric_comparison" }.isEmpty)
    }
}
