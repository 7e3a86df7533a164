// PLACEHOLDER evaluator (skeleton): the real one replaces this file.
struct Evaluation {
    let container: Container
    let message: ValueMap
    let model: ValueMap
    let eventName: String?
    let eventNumber: Int
    let dataLayer: DataLayer
    let handlers: TagManager.Handlers
    let recordTrace: Bool

    mutating func run() -> EventReport {
        EventReport(containerID: container.id, eventName: eventName, message: message, fired: [], trace: nil)
    }
}
