import ContainerKit
import Hummingbird
import NIOCore

/// The answer of `POST /v1/batch`, written straight to bytes:
/// `{"results": [item, …], "accepted": n, "refused": m}` with one item per event, in order — a pushed
/// event's item is the body `POST /v1/events` answers plus `"status": 200`; a refused one's is
/// `{"error": {"code", "message", "pointer"?, "line"?, "column"?}, "status": <its HTTP status>}` (with `user_id`
/// when it named one).
///
/// Each event's item is written as soon as the event is pushed, so its ``PushResult`` is released before the
/// next event is pushed (a batch does not hold every event's tags, records and arguments until it answers).
/// The answer keeps, per pushed item, the durability tokens of its records (``tokens``) and where its
/// bytes are, so that a failed wait can refuse in its place each event whose records are not durable.
struct BatchAnswer {
    private struct Item {
        /// Where the item's bytes are (in ``bytes``).
        var range: Range<Int>
        /// The user the event names, for its refusal.
        var userID: String?
        /// Its records' tokens (in ``tokens``); `nil` for a refused event.
        var tokens: Range<Int>?
    }

    private var bytes: [UInt8] = []
    private var items: [Item] = []
    private var accepted = 0
    private var refused = 0
    /// The durability tokens of every pushed event's records, in order: what the batch waits for.
    private(set) var tokens: [DurabilityToken] = []

    /// An empty answer with room for `events` items.
    init(events: Int) {
        bytes.reserveCapacity(1024 * events)
        bytes.append(contentsOf: #"{"results":["#.utf8)
        items.reserveCapacity(events)
        tokens.reserveCapacity(2 * events)
    }

    /// The answer of a batch whose events had `outcomes` (in order), naming `userIDs` (the request's
    /// ``BatchRequest/userIDs``), with nothing left to wait for.
    static func response(
        _ outcomes: [Result<PushResult, APIError>],
        userIDs: [String?],
        durable: Bool
    ) -> Response {
        var answer = BatchAnswer(events: outcomes.count)
        for (outcome, userID) in zip(outcomes, userIDs) {
            switch outcome {
            case .success(let result): answer.appendPushed(result, userID: userID ?? "", durable: durable)
            case .failure(let error): answer.appendRefused(error, userID: userID)
            }
        }
        return answer.response()
    }

    /// Appends a pushed event's item; with `tokens`, the durability tokens of its records (waited for with
    /// the batch's).
    mutating func appendPushed(
        _ result: PushResult,
        userID: String,
        durable: Bool,
        tokens: [DurabilityToken] = []
    ) {
        let start = separate()
        accepted += 1
        appendEventAnswerMembers(result, userID: userID, durable: durable, to: &bytes)
        bytes.append(contentsOf: #","status":200}"#.utf8)
        let first = self.tokens.count
        self.tokens += tokens
        items.append(Item(range: start..<bytes.count, userID: userID, tokens: first..<self.tokens.count))
    }

    /// Appends a refused event's item.
    mutating func appendRefused(_ error: APIError, userID: String?) {
        let start = separate()
        refused += 1
        bytes.append(contentsOf: #"{"error":"#.utf8)
        bytes.append(contentsOf: JSONWriter.bytes(.object(error.jsonMembers)))
        if let userID {
            bytes.append(contentsOf: #","user_id":"#.utf8)
            JSONWriter.writeString(userID, into: &bytes)
        }
        bytes.append(contentsOf: #","status":"#.utf8)
        bytes.append(contentsOf: String(error.status.code).utf8)
        bytes.append(0x7D)
        items.append(Item(range: start..<bytes.count, userID: userID, tokens: nil))
    }

    /// After the batch's wait failed with `refusal`: refuses in its place every pushed event whose own records
    /// are not durable (each event's writes have ended by then, so this waits no more), every pushed event
    /// when the queue does not run (it stored none of them).
    mutating func refuseUndurable(_ refusal: APIError) async {
        var rebuilt = BatchAnswer(events: items.count)
        for item in items {
            if let range = item.tokens {
                var durable = refusal.code != .queueNotRunning
                if durable {
                    do {
                        try await DurabilityToken.waitUntilDurable(tokens[range])
                    } catch {
                        durable = false
                    }
                }
                if durable {
                    rebuilt.copy(bytes[item.range], accepted: true, userID: item.userID)
                } else {
                    rebuilt.appendRefused(refusal, userID: item.userID)
                }
            } else {
                rebuilt.copy(bytes[item.range], accepted: false, userID: item.userID)
            }
        }
        self = rebuilt
    }

    /// Appends an item written before (the tokens are not kept: it is not waited for again).
    private mutating func copy(_ item: ArraySlice<UInt8>, accepted: Bool, userID: String?) {
        let start = separate()
        if accepted { self.accepted += 1 } else { refused += 1 }
        bytes.append(contentsOf: item)
        items.append(Item(range: start..<bytes.count, userID: userID, tokens: nil))
    }

    /// Writes the comma before every item but the first; returns where the item starts.
    private mutating func separate() -> Int {
        if accepted + refused > 0 { bytes.append(0x2C) }
        return bytes.count
    }

    /// The `200` response.
    consuming func response() -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body()))
        )
    }

    /// The answer's JSON text.
    consuming func body() -> [UInt8] {
        bytes.append(contentsOf: #"],"accepted":"#.utf8)
        bytes.append(contentsOf: String(accepted).utf8)
        bytes.append(contentsOf: #","refused":"#.utf8)
        bytes.append(contentsOf: String(refused).utf8)
        bytes.append(0x7D)
        return bytes
    }
}
