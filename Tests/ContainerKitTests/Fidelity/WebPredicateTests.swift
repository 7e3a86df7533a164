import ContainerKit
import Testing

extension Fidelity {
    /// The web runtime's other predicates: `_lc` (list contains) and `any_of` (issue 24, point 11), as
    /// gtm.js evaluates them.
    @Suite struct WebPredicateTests {
        /// A web container whose tag fires on event `e` when `predicate` (the JSON of one predicate over
        /// macro 1, the data-layer value `v`) holds.
        static func container(_ predicate: String) throws -> Container {
            try TestContainers.load(
                json: """
                    var data = {"resource": {"version": "1", "macros": [{"function": "__e"},
                      {"function": "__v", "vtp_name": "v", "vtp_dataLayerVersion": 2}],
                      "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                      "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}, \(predicate)],
                      "rules": [[["if", 0, 1], ["add", 0]]]}};
                    """,
                file: "gtm.js"
            )
        }

        static func fires(_ container: Container, _ value: Value) -> Bool {
            Fidelity.arguments(container, before: [["v": value]]) != nil
        }

        @Test func listContainsFindsAnElementOfTheCommaSeparatedList() throws {
            let container = try Self.container(#"{"function": "_lc", "arg0": ["macro", 1], "arg1": "b"}"#)
            #expect(container.unsupported.isEmpty)
            #expect(Self.fires(container, "a,b,c"))
            #expect(Self.fires(container, ["a", "b"]))
            #expect(!Self.fires(container, "a,bb,c"))
            #expect(!Self.fires(container, "a, b"))
            #expect(!Self.fires(container, "abc"))
        }

        @Test func anyOfHoldsWhenTheTestHoldsForAnyElementOfTheList() throws {
            let container = try Self.container(
                #"{"function": "_eq", "arg0": ["macro", 1], "arg1": ["list", "x", "y"], "any_of": true}"#
            )
            #expect(Self.fires(container, "x"))
            #expect(Self.fires(container, "y"))
            #expect(!Self.fires(container, "x,y"))
            #expect(!Self.fires(container, "z"))
        }

        @Test func anyOfWorksWithEveryOperator() throws {
            let regex = try Self.container(
                #"{"function": "_re", "arg0": ["macro", 1], "arg1": ["list", "^a\\d$", "^b"], "any_of": true}"#
            )
            #expect(Self.fires(regex, "a1"))
            #expect(Self.fires(regex, "bcd"))
            #expect(!Self.fires(regex, "a12"))
            let greater = try Self.container(
                #"{"function": "_gt", "arg0": ["macro", 1], "arg1": ["list", 10, 5], "any_of": true}"#
            )
            #expect(Self.fires(greater, 7))
            #expect(!Self.fires(greater, 3))
        }

        @Test func anyOfWithoutAListComparesAsUsual() throws {
            let container = try Self.container(
                #"{"function": "_eq", "arg0": ["macro", 1], "arg1": "x", "any_of": true}"#
            )
            #expect(Self.fires(container, "x"))
            #expect(!Self.fires(container, "y"))
        }
    }
}
