import Testing

@testable import RivetTransport

/// The connection race's decisions, driven by a manual clock (times since the race began).
@Suite struct HappyEyeballsTests {
    private func ms(_ value: Int) -> Duration { .milliseconds(value) }

    @Test func theNextAddressStartsAfterTheStaggerAndNotBefore() {
        var race = HappyEyeballs(count: 3)
        #expect(race.begin(at: ms(0)) == [.start(0)])
        #expect(race.nextStart == ms(250))
        #expect(race.tick(at: ms(249)) == [])
        #expect(race.tick(at: ms(250)) == [.start(1)])
        #expect(race.nextStart == ms(500))
        #expect(race.tick(at: ms(400)) == [])
        #expect(race.tick(at: ms(510)) == [.start(2)])
        // Nothing is left to start: only an event moves the race on.
        #expect(race.nextStart == nil)
        #expect(race.tick(at: ms(10_000)) == [])
    }

    @Test func aFailureStartsTheNextAddressAtOnceAndRestartsTheStagger() {
        var race = HappyEyeballs(count: 3)
        _ = race.begin(at: ms(0))
        #expect(race.handle(.connectFailed(0), at: ms(20)) == [.start(1)])
        #expect(race.nextStart == ms(270))
        #expect(race.tick(at: ms(250)) == [])
        #expect(race.tick(at: ms(270)) == [.start(2)])
    }

    @Test func theFirstConnectionWinsAndTheOthersAreClosed() {
        var race = HappyEyeballs(count: 4)
        _ = race.begin(at: ms(0))
        _ = race.tick(at: ms(250))
        _ = race.tick(at: ms(500))
        #expect(race.handle(.connected(1), at: ms(600)) == [.handshake(1), .abandon(0), .abandon(2)])
        // While the winner's handshake runs nothing else starts, and a late connection is ignored.
        #expect(race.nextStart == nil)
        #expect(race.tick(at: ms(5000)) == [])
        #expect(race.handle(.connected(2), at: ms(601)) == [])
        #expect(race.handle(.handshakeSucceeded(1), at: ms(700)) == [.succeeded(1)])
        #expect(race.isOver)
    }

    @Test func aPinMismatchStopsEverything() {
        var race = HappyEyeballs(count: 3)
        _ = race.begin(at: ms(0))
        _ = race.tick(at: ms(250))
        #expect(race.handle(.connected(0), at: ms(300)) == [.handshake(0), .abandon(1)])
        #expect(race.handle(.handshakeFailed(0, final: true), at: ms(320)) == [.failed])
        #expect(race.isOver)
        // No other address is tried after a wrong key.
        #expect(race.tick(at: ms(10_000)) == [])
        #expect(race.handle(.connectFailed(1), at: ms(10_001)) == [])
        #expect(race.nextStart == nil)
    }

    @Test func anotherHandshakeFailureGoesOnWithTheAddressesLeft() {
        var race = HappyEyeballs(count: 3)
        _ = race.begin(at: ms(0))
        _ = race.tick(at: ms(250))
        #expect(race.handle(.connected(1), at: ms(260)) == [.handshake(1), .abandon(0)])
        // The abandoned address is tried again, at once.
        #expect(race.handle(.handshakeFailed(1, final: false), at: ms(300)) == [.start(0)])
        #expect(race.tick(at: ms(550)) == [.start(2)])
        #expect(race.handle(.connectFailed(0), at: ms(560)) == [])
        #expect(race.handle(.connectFailed(2), at: ms(570)) == [.failed])
        #expect(race.isOver)
    }

    @Test func whenEveryAddressFailsTheRaceFails() {
        var race = HappyEyeballs(count: 2)
        _ = race.begin(at: ms(0))
        #expect(race.handle(.connectFailed(0), at: ms(1)) == [.start(1)])
        #expect(race.handle(.connectFailed(1), at: ms(2)) == [.failed])
        var single = HappyEyeballs(count: 1)
        #expect(single.begin(at: ms(0)) == [.start(0)])
        #expect(single.nextStart == nil)
        #expect(single.handle(.connectFailed(0), at: ms(5)) == [.failed])
    }

    @Test func anAddressThatNeverAnswersCostsOneStagger() {
        // The first address is a black hole; the second answers 30 ms after it starts.
        var race = HappyEyeballs(count: 2)
        _ = race.begin(at: ms(0))
        #expect(race.tick(at: ms(250)) == [.start(1)])
        #expect(race.handle(.connected(1), at: ms(280)) == [.handshake(1), .abandon(0)])
        #expect(race.handle(.handshakeSucceeded(1), at: ms(290)) == [.succeeded(1)])
    }
}
