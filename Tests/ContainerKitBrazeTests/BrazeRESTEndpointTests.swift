import ContainerKit
import ContainerKitBraze
import Foundation
import Testing

/// `BrazeUsersTrackDestination.restEndpoint(parsing:)` and where a destination's requests go: an endpoint as
/// people paste it reaches `/users/track` once, and what cannot be an endpoint is refused saying why.
struct BrazeRESTEndpointTests {
    @Test(arguments: [
        ("https://rest.iad-01.braze.com", "https://rest.iad-01.braze.com"),
        ("https://rest.iad-01.braze.com/", "https://rest.iad-01.braze.com"),
        ("https://rest.iad-01.braze.com/users/track", "https://rest.iad-01.braze.com"),
        ("https://rest.iad-01.braze.com/users/track/", "https://rest.iad-01.braze.com"),
        ("https://rest.iad-01.braze.com/users/identify", "https://rest.iad-01.braze.com"),
        ("http://127.0.0.1:8099/braze/", "http://127.0.0.1:8099/braze"),
    ])
    func anEndpointAsPeoplePasteItIsItsBase(text: String, base: String) throws {
        let endpoint = try BrazeUsersTrackDestination.restEndpoint(parsing: text)
        #expect(endpoint.absoluteString == base)
        let destination = BrazeUsersTrackDestination(endpoint: endpoint, apiKey: "key")
        #expect(destination.usersTrackURL.absoluteString == base + "/users/track")
    }

    @Test func aDestinationMadeOnAWholeAPIURLPostsToUsersTrackOnce() {
        for text in [
            "https://rest.fra-01.braze.eu/users/track", "https://rest.fra-01.braze.eu/", "https://rest.fra-01.braze.eu",
        ] {
            let destination = BrazeUsersTrackDestination(endpoint: URL(string: text)!, apiKey: "key")
            #expect(destination.usersTrackURL.absoluteString == "https://rest.fra-01.braze.eu/users/track", "\(text)")
        }
    }

    @Test(arguments: [
        ("rest.iad-01.braze.com", "is not an http(s) URL such as https://rest.iad-01.braze.com"),
        ("ftp://rest.iad-01.braze.com", "is not an http(s) URL"),
        ("https://rest.iad-01.braze.com:99999", "the port must be 1–65535, not 99999"),
        ("https://rest.iad-01.braze.com?api_key=k", "has a query or a fragment"),
        ("https://rest.iad-01.braze.com/#top", "has a query or a fragment"),
        ("https://me:s3cret@rest.iad-01.braze.com", "holds a user name or password"),
    ])
    func whatCannotBeAnEndpointIsRefusedSayingWhy(text: String, words: String) {
        let error = #expect(throws: ContainerError.self) { try BrazeUsersTrackDestination.restEndpoint(parsing: text) }
        #expect(error?.code == .invalidEndpoint)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("s3cret") == false)
    }

    @Test func anAPIKeyFromASecretLosesTheLineBreakAroundItAndABrokenOneIsRefusedWithoutShowingIt() throws {
        #expect(try BrazeUsersTrackDestination.restAPIKey(parsing: "  3f1c-9a7e-secret\n") == "3f1c-9a7e-secret")
        for text in ["\n", "3f1c 9a7e-secret", "3f1c\t9a7e-secret", "clé-3f1c-9a7e"] {
            let error = #expect(throws: ContainerError.self) {
                try BrazeUsersTrackDestination.restAPIKey(parsing: text)
            }
            #expect(error?.code == .invalidAPIKey)
            #expect(error?.message.contains("secret") == false, "\(error?.message ?? "")")
        }
    }

    @Test func anObjectLimitIsANumberInAllOrOfEachKindFromOneToSeventyFive() throws {
        typealias Limit = BrazeUsersTrackDestination.ObjectLimit
        #expect(try Limit(parsing: "50") == .total(50))
        #expect(try Limit(parsing: "1") == .total(1))
        #expect(try Limit(parsing: "75-each") == .perCategory(75))
        #expect(try Limit(parsing: "75-each") == .legacy)
        for text in ["", "0", "76", "-each", "each", "+5", " 5", "5 ", "75-EACH", "7.5", "1e1", "٣"] {
            let error = #expect(throws: ContainerError.self) { try Limit(parsing: text) }
            #expect(error?.code == .invalidObjectLimit)
            #expect(error?.message.contains("'\(text)' is not an object limit") == true, "\(error?.message ?? "")")
        }
    }
}
