import CodedError

/// Why the pairing coordinator refused an input or ended an attempt. It is sent to the device
/// (in a rejection message) or shown to the desktop's person, so every message says what
/// happened and what to do; none carries a secret.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingRefusal: CodedError {
    /// The kinds of failure; equality and hashing compare these alone.
    public enum Code: Hashable, Sendable {
        case windowClosed, windowAlreadyOpen, attemptInProgress, noAttempt, unexpectedMessage
        case commitmentMismatch, codeMismatch, codeNotReady, alreadyConfirmed
        case rejectedByDevice, rejectedByDesktop, connectionLost, cancelled, windowExpired
        case tooManyFailures, randomnessUnavailable
        case linkRequired, linkNotOpen, linkProofMismatch, noCodeForLink
    }

    public let code: Code
    /// What happened, for a person.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// No pairing window is open.
    public static let windowClosed = Self(
        .windowClosed, "no pairing window is open; open one on the desktop (rivet-pair) and try again")
    /// `open` while a window is already open.
    public static let windowAlreadyOpen = Self(.windowAlreadyOpen, "a pairing window is already open")
    /// A second `PairBegin` while another device's attempt is active.
    public static let attemptInProgress = Self(
        .attemptInProgress, "another device is pairing right now; only one attempt runs at a time, try again later")
    /// A pairing message (or a desktop decision) when there is no attempt, or a device message from
    /// a connection that does not own the active attempt.
    public static let noAttempt = Self(.noAttempt, "there is no pairing attempt for this message")
    /// The attempt's own device sent a message out of order; the attempt ends and it counts as a
    /// failure.
    public static let unexpectedMessage = Self(
        .unexpectedMessage, "the device sent a pairing message out of order; the attempt ended")
    /// The revealed `Nc` does not open the commitment from `PairBegin`.
    public static let commitmentMismatch = Self(
        .commitmentMismatch, "the device's nonce does not match its commitment; the attempt ended")
    /// The code typed on the desktop differs from the server's code.
    public static let codeMismatch = Self(
        .codeMismatch,
        "the typed code does not match this desktop's code; the attempt ended (a mismatch can mean someone is intercepting the connection)")
    /// The desktop confirmed before the device revealed its nonce, so there is no code yet.
    public static let codeNotReady = Self(
        .codeNotReady, "the device has not revealed its nonce yet, so there is no code to confirm")
    /// The desktop confirmed twice.
    public static let alreadyConfirmed = Self(
        .alreadyConfirmed, "the desktop already confirmed this attempt; waiting for the device")
    /// The device's person rejected the code.
    public static let rejectedByDevice = Self(.rejectedByDevice, "the device rejected the pairing")
    /// The desktop's person rejected the attempt.
    public static let rejectedByDesktop = Self(.rejectedByDesktop, "the desktop rejected the pairing")
    /// The device's connection closed during its attempt.
    public static let connectionLost = Self(
        .connectionLost, "the device disconnected during pairing; the attempt ended")
    /// The desktop cancelled the window.
    public static let cancelled = Self(.cancelled, "pairing was cancelled on the desktop")
    /// The five-minute window ran out.
    public static let windowExpired = Self(
        .windowExpired, "the pairing window closed after 5 minutes; open a new one to pair")
    /// The fifth failure in one window closed it.
    public static let tooManyFailures = Self(
        .tooManyFailures, "the pairing window closed after 5 failed attempts; open a new one to pair")
    /// No random bytes could be drawn for a nonce, credential or device ID.
    public static let randomnessUnavailable = Self(
        .randomnessUnavailable, "the server could not draw random bytes; the attempt ended")

    /// A device asked to pair by code while the window is open for pairing by link only.
    public static let linkRequired = Self(
        .linkRequired,
        "this pairing window admits only the device that holds its link (QR code); pairing by code was refused")
    /// A device asked to pair by link while the window is open for pairing by code.
    public static let linkNotOpen = Self(
        .linkNotOpen, "no pairing window for a link is open; open one with rivet-pair --open --qr")
    /// The device's proof does not match the window's token and this connection.
    public static let linkProofMismatch = Self(
        .linkProofMismatch,
        "the device's proof does not match this window's link (a wrong or old link, or a proof taken from another connection); the attempt ended")
    /// The desktop typed a code for an attempt by link, which has none.
    public static let noCodeForLink = Self(
        .noCodeForLink, "this device pairs by link and has no code; confirm it without --code")
}
