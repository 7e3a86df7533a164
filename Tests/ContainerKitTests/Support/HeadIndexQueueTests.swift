import Testing

@_spi(Hot) @testable import ContainerKit

/// The shared first-in, first-out queue: order, batches, and the release of what was taken.
@Suite struct HeadIndexQueueTests {
    @Test func elementsLeaveInTheOrderTheyCame() {
        var queue = HeadIndexQueue<Int>()
        queue.append(contentsOf: 1...5)
        #expect(queue.popFirst() == 1)
        #expect(queue.popFirst(upTo: 3) == [2, 3, 4])
        #expect(queue[0] == 5)
        #expect(queue.count == 1)
        #expect(queue.popFirst(upTo: 10) == [5])
        #expect(queue.popFirst() == nil)
        #expect(queue.isEmpty)
    }

    @Test func takenElementsAreReleasedWhenTheyPassTheThresholdAndHalfTheStorage() {
        var queue = HeadIndexQueue<Int>()
        let threshold = HeadIndexQueue<Int>.compactionThreshold
        queue.append(contentsOf: 0..<(threshold * 3))
        _ = queue.popFirst(upTo: threshold)
        #expect(queue.takenStorage == threshold)  // not past the threshold yet
        _ = queue.popFirst(upTo: threshold)
        #expect(queue.takenStorage == 0)  // more than the threshold and more than half: released
        #expect(queue.count == threshold)
        #expect(queue.popFirst() == threshold * 2)
    }

    @Test func anEmptiedQueueStartsOver() {
        var queue = HeadIndexQueue<String>()
        queue.append("a")
        _ = queue.popFirst()
        #expect(queue.takenStorage == 0)
        queue.append("b")
        #expect(queue.removeAll() == 1)
        #expect(queue.isEmpty)
    }

    /// A reference a test can watch being released.
    final class Tracked {}

    @Test func aTakenElementIsReleasedOnceItsTakerLetsGoNotAtCompaction() {
        var queue = HeadIndexQueue<Tracked>()
        weak var taken: Tracked?
        weak var dropped: Tracked?
        do {
            let first = Tracked()
            let second = Tracked()
            taken = first
            dropped = second
            queue.append(first)
            queue.append(second)
            queue.append(Tracked())
        }
        _ = queue.popFirst()
        queue.removeFirst(1)
        #expect(queue.count == 1)
        #expect(queue.takenStorage == 2)  // the slots are still there, empty
        #expect(taken == nil)
        #expect(dropped == nil)
    }
}
