import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 38: pushing events needs a write key, presented the way Segment's and RudderStack's sources do.
@Suite struct WriteKeyTests {
    static let keys = ["wk-old-0123456789abcdef", "wk-new-0123456789abcdef"]

    /// `Basic base64("<user>:<password>")`.
    static func basic(_ user: String, password: String = "") -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    static func headers(_ authorization: String?) -> HTTPFields {
        var headers = HTTPFields.json
        if let authorization { headers[.authorization] = authorization }
        return headers
    }

    @Test func eventsNeedOneOfTheWriteKeysAndNothingIsPushedWithoutOne() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.writeKeys = Self.keys
        let service = try await fixture.make()
        let refused: [String?] = [
            nil, "Bearer wk-old-0123456789abcdeX", "Bearer wk-old-0123456789abcde", "Bearer wk-old-0123456789abcdef0",
            Self.basic(Self.keys[0], password: "x"), Self.basic("", password: Self.keys[0]), "Basic !!not-base64",
            "Basic " + Data(Self.keys[0].utf8).base64EncodedString(), "Digest \(Self.keys[0])", Self.keys[0],
            "Bearer ",
        ]
        try await service.application.test(.router) { client in
            for authorization in refused {
                for (path, body) in [
                    ("/v1/events", eventBody(user: "ada")), ("/v1/users/ada/events", eventBody(user: "ada")),
                    ("/v1/batch", batchBody([batchEvent(user: "ada", title: "t")])),
                    ("/v1/users/ada/batch", batchBody([batchEvent(user: "ada", title: "t")])),
                ] {
                    let response = try await client.execute(
                        uri: path,
                        method: .post,
                        headers: Self.headers(authorization),
                        body: body
                    )
                    #expect(response.status == .unauthorized, "\(path) \(authorization ?? "none")")
                    #expect(try response.json["error"]?.objectValue?["code"] == "unauthorized")
                    let challenges = response.headers[values: .wwwAuthenticate]
                    #expect(
                        challenges == [#"Basic realm="TagService", charset="UTF-8""#, #"Bearer realm="TagService""#]
                    )
                    // The answer never repeats what was presented.
                    #expect(!String(buffer: response.body).contains("wk-"))
                }
            }
            // Two keys in one request are refused too.
            var two = Self.headers("Bearer \(Self.keys[0])")
            two.append(HTTPField(name: .authorization, value: "Bearer \(Self.keys[1])"))
            try await client.execute(uri: "/v1/events", method: .post, headers: two, body: eventBody(user: "ada")) {
                #expect($0.status == .unauthorized)
            }
            #expect(service.sessions.count == 0)
            #expect(service.queue?.lastTicket == 0)

            // Either key (rotation), as Basic with an empty password or as Bearer, schemes in any case.
            let accepted = [
                Self.basic(Self.keys[0]), Self.basic(Self.keys[1]), "Bearer \(Self.keys[1])", "bearer \(Self.keys[0])",
                "BASIC " + Data("\(Self.keys[1]):".utf8).base64EncodedString(),
            ]
            for authorization in accepted {
                let response = try await client.execute(
                    uri: "/v1/events",
                    method: .post,
                    headers: Self.headers(authorization),
                    body: eventBody(user: "ada")
                )
                #expect(response.status == .ok, "\(authorization)")
            }
            let batch = try await client.execute(
                uri: "/v1/users/ada/batch",
                method: .post,
                headers: Self.headers(Self.basic(Self.keys[1])),
                body: batchBody([#"{"event": "played song"}"#])
            )
            #expect(batch.status == .ok)
            // The probes and the metrics stay open.
            for path in ["/health", "/ready", "/metrics"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .ok, "\(path)") }
            }
        }
        #expect(service.sessions.count == 1)
    }

    @Test func theMetricsTokenGuardsMetricsAndNothingElse() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.metricsToken = "metrics-token-0123456789"
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for authorization in [nil, "Bearer metrics-token-012345678", Self.basic("metrics-token-0123456789")] {
                var headers = HTTPFields()
                if let authorization { headers[.authorization] = authorization }
                try await client.execute(uri: "/metrics", method: .get, headers: headers) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[values: .wwwAuthenticate] == [#"Bearer realm="metrics""#])
                }
            }
            try await client.execute(
                uri: "/metrics",
                method: .get,
                headers: [.authorization: "Bearer metrics-token-0123456789"]
            ) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("tagservice_"))
            }
            for path in ["/health", "/ready"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .ok) }
            }
            // Without write keys, events stay open (the service warned at start).
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test func keysAreComparedWholeAndByBytes() {
        let key = Array("wk-old-0123456789abcdef".utf8)
        #expect(WriteKeys.constantTimeEquals(key, key))
        #expect(!WriteKeys.constantTimeEquals(Array(key.dropLast()), key))
        #expect(!WriteKeys.constantTimeEquals(key + [0], key))
        #expect(!WriteKeys.constantTimeEquals([], key))
        #expect(!WriteKeys.constantTimeEquals(key + key, key))
        var other = key
        other[0] ^= 1
        #expect(!WriteKeys.constantTimeEquals(other, key))
    }

    /// On the real executable: a service without a key says so at start; keys given by the variable and by a
    /// file work, and neither they nor their Basic encoding ever reach the log (at the most verbose level).
    @Test func theServiceWarnsWithoutKeysAndNeverLogsThem() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let open = try ServiceProcess(OperatingTests.arguments(fixture, ["--log-level", "info"]))
        try await open.waitUntilListening()
        #expect(open.log.contains { $0.contains("no write key") && $0.contains("keep it private") })
        #expect(await open.stop(SIGTERM) == 0)

        let file = fixture.root.appendingPathComponent("write-keys")
        try "\(Self.keys[1])\n".write(to: file, atomically: true, encoding: .utf8)
        let keyed = try ServiceProcess(
            OperatingTests.arguments(fixture, ["--write-key-file", file.path, "--log-level", "trace"]),
            environment: ["TAGSERVICE_WRITE_KEYS": Self.keys[0]]
        )
        try await keyed.waitUntilListening()
        let body = #"{"user_id": "ada", "event": "played song"}"#
        for (authorization, status) in [
            (nil, 401), ("Bearer \(Self.keys[0])x", 401), (Self.basic(Self.keys[0]), 200),
            ("Bearer \(Self.keys[1])", 200),
        ] {
            let answer = try await keyed.rawPost("/v1/events", body: body, authorization: authorization)
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(authorization ?? "none")")
        }
        #expect(await keyed.stop(SIGTERM) == 0)
        #expect(!keyed.log.contains { $0.contains("no write key") })
        let secrets = Self.keys + Self.keys.map { Data("\($0):".utf8).base64EncodedString() }
        for line in keyed.log {
            for secret in secrets { #expect(!line.contains(secret), "\(line)") }
        }
    }
}
