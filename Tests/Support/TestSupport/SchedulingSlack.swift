/// What a parallel `swift test` on a loaded two-core machine can add between an event and the
/// resumption of the task awaiting it: Swift Testing's exit tests block threads of the
/// cooperative pool (two here) while their children run, so at the start of a run a task that
/// measures the time around an `await` resumed up to 12 s late (measured). A check that an
/// operation ends "long before it would hang" adds this to its bound; a check that can read the
/// time on the thread that did the work (RivetTransportTests' `onThreadEnding`) needs none.
public let schedulingSlack: Duration = .seconds(15)
