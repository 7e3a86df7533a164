/// A first-in, first-out queue: an array and the index of its first element, so taking from the front
/// costs O(1) instead of shifting the array. What was taken is released when the queue empties, or once
/// more than ``compactionThreshold`` elements were taken and they are more than half the array.
///
/// The one such queue of the package (the session turnstile's waiters and nested pushes, the durable
/// queue's committed records in memory, the memory record store's records).
///
/// ```swift
/// var queue = HeadIndexQueue<Int>()
/// queue.append(contentsOf: [1, 2, 3])
/// queue.popFirst()          // 1
/// queue.popFirst(upTo: 5)   // [2, 3]
/// ```
package struct HeadIndexQueue<Element> {
    /// Taken elements kept before the array is compacted (when they are also more than half of it).
    package static var compactionThreshold: Int { 4096 }

    private var elements: [Element] = []
    private var head = 0

    /// An empty queue.
    package init() {}

    /// The elements waiting.
    package var count: Int { elements.count - head }

    /// Whether nothing is waiting.
    package var isEmpty: Bool { head == elements.count }

    /// Elements taken but not yet released (for tests of the compaction).
    package var takenStorage: Int { head }

    /// The element `offset` places behind the first.
    package subscript(offset: Int) -> Element { elements[head + offset] }

    /// Adds `element` at the back.
    package mutating func append(_ element: Element) { elements.append(element) }

    /// Adds `newElements` at the back, in order.
    package mutating func append(contentsOf newElements: some Sequence<Element>) {
        elements.append(contentsOf: newElements)
    }

    /// The first element, if any, left in place.
    package var first: Element? { head < elements.count ? elements[head] : nil }

    /// Takes the first element, if any.
    package mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let first = elements[head]
        head += 1
        compact()
        return first
    }

    /// Takes up to `limit` elements from the front, in order.
    package mutating func popFirst(upTo limit: Int) -> [Element] {
        let end = min(elements.count, head + max(0, limit))
        let taken = Array(elements[head..<end])
        head = end
        compact()
        return taken
    }

    /// Drops up to `count` elements from the front.
    package mutating func removeFirst(_ count: Int) {
        head = min(elements.count, head + max(0, count))
        compact()
    }

    /// Drops every element; `count` of them were waiting.
    @discardableResult
    package mutating func removeAll() -> Int {
        defer {
            elements.removeAll()
            head = 0
        }
        return count
    }

    private mutating func compact() {
        if head == elements.count {
            elements.removeAll(keepingCapacity: elements.count <= Self.compactionThreshold)
            head = 0
        } else if head > Self.compactionThreshold && head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
    }
}

extension HeadIndexQueue: Sendable where Element: Sendable {}
