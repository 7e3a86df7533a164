import ContainerKit
import Testing

extension Fidelity {
    /// A suggested event parameter with `checkEcommerceValue` falls back to `items[0][key]`, then
    /// `promotions[0][key]`, as the container runtime's own `__md` does (issue 24, point 3).
    @Suite struct EcommerceEventParameterTests {
        static func container(checks: Bool = true, eventType: String = "SUGGESTED") throws -> Container {
            try Fidelity.resource(
                macro: """
                    {"function": "__md", "vtp_eventType": "\(eventType)", "vtp_key": "item_id",
                     "vtp_ecommerceParam": "item_id", "vtp_checkEcommerceValue": \(checks),
                     "vtp_setDefaultValue": true, "vtp_defaultValue": "none"}
                    """
            )
        }

        @Test func aMissingParameterIsReadFromTheFirstItem() throws {
            let parameters: ValueMap = ["items": [["item_id": "sku-1"], ["item_id": "sku-2"]]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == ["value": "sku-1"])
        }

        @Test func theParameterItselfComesFirst() throws {
            let parameters: ValueMap = ["item_id": "own", "items": [["item_id": "sku-1"]]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == ["value": "own"])
        }

        @Test func promotionsAreReadWhenItemsDoNotHaveTheKey() throws {
            let parameters: ValueMap = ["items": [["name": "x"]], "promotions": [["item_id": "promo-1"]]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == ["value": "promo-1"])
        }

        @Test func aMapInsteadOfAListIsReadDirectly() throws {
            let parameters: ValueMap = ["items": ["item_id": "sku-9"]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == ["value": "sku-9"])
        }

        @Test func neitherListHavingTheKeyGivesTheDefault() throws {
            let parameters: ValueMap = ["items": [["name": "x"]]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == ["value": "none"])
        }

        @Test func anEmptyItemsListIsUndefinedAsTheRuntimeFailsOnIt() throws {
            let parameters: ValueMap = ["items": .array([]), "promotions": [["item_id": "promo-1"]]]
            #expect(Fidelity.arguments(try Self.container(), parameters: parameters) == [:])
        }

        /// `__md_main` asks `!= undefined` (loosely, opcode 21), which a `null` fails: a null parameter is a missing
        /// one, a null `items` list or `items[0][key]` is skipped for `promotions`.
        @Test func aNullIsMissingForTheParameterTheListAndTheItemsValue() throws {
            let container = try Self.container()
            #expect(Fidelity.arguments(container, parameters: ["item_id": .null]) == ["value": "none"])
            let nullList: ValueMap = ["items": .null, "promotions": [["item_id": "promo-1"]]]
            #expect(Fidelity.arguments(container, parameters: nullList) == ["value": "promo-1"])
            let nullValue: ValueMap = ["items": [["item_id": .null]], "promotions": [["item_id": "promo-1"]]]
            #expect(Fidelity.arguments(container, parameters: nullValue) == ["value": "promo-1"])
            // A custom parameter too, and a dotted one.
            let custom = try Self.container(eventType: "CUSTOM")
            #expect(Fidelity.arguments(custom, parameters: ["item_id": .null]) == ["value": "none"])
        }

        @Test func withoutTheOptionOrForCustomParametersThereIsNoFallback() throws {
            let parameters: ValueMap = ["items": [["item_id": "sku-1"]]]
            #expect(Fidelity.arguments(try Self.container(checks: false), parameters: parameters) == ["value": "none"])
            #expect(
                Fidelity.arguments(try Self.container(eventType: "CUSTOM"), parameters: parameters) == ["value": "none"]
            )
        }
    }
}
