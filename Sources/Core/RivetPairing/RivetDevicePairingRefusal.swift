import CodedError

/// Why the pairing coordinator refused an input or ended an attempt. It is sent to the device
/// (in a rejection message) or shown to the desktop's person, so every message says what
/// happened and what to do; none carries a secret.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingRefusal: CodedError {
    public let code: Code
    /// What happened, for a person.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case windowClosed, windowAlreadyOpen, attemptInProgress, noAttempt, unexpectedMessage, commitmentMismatch, codeMismatch, codeNotReady, alreadyConfirmed, rejectedByDevice, rejectedByDesktop, connectionLost, cancelled, windowExpired, tooManyFailures, randomnessUnavailable, linkRequired, linkNotOpen, linkProofMismatch, noCodeForLink, notANamesake
    }

    /// No pairing window is open.
    public static let windowClosed = Self(code: .windowClosed, message: "no pairing window is open; open one on the desktop (rivet-pair) and try again")
    /// `open` while a window is already open.
    public static let windowAlreadyOpen = Self(code: .windowAlreadyOpen, message: "a pairing window is already open")
    /// A second `PairBegin` while another device's attempt is active.
    public static let attemptInProgress = Self(code: .attemptInProgress, message: "another device is pairing right now; only one attempt runs at a time, try again later")
    /// A pairing message (or a desktop decision) when there is no attempt, or a device message from a connection that does not own the active attempt.
    public static let noAttempt = Self(code: .noAttempt, message: "there is no pairing attempt for this message")
    /// The attempt's own device sent a message out of order; the attempt ends and it counts as a failure.
    public static let unexpectedMessage = Self(code: .unexpectedMessage, message: "the device sent a pairing message out of order; the attempt ended")
    /// The revealed `Nc` does not open the commitment from `PairBegin`.
    public static let commitmentMismatch = Self(code: .commitmentMismatch, message: "the device's nonce does not match its commitment; the attempt ended")
    /// The code typed on the desktop differs from the server's code.
    public static let codeMismatch = Self(code: .codeMismatch, message: "the typed code does not match this desktop's code; the attempt ended (a mismatch can mean someone is intercepting the connection)")
    /// The desktop confirmed before the device revealed its nonce, so there is no code yet.
    public static let codeNotReady = Self(code: .codeNotReady, message: "the device has not revealed its nonce yet, so there is no code to confirm")
    /// The desktop confirmed twice.
    public static let alreadyConfirmed = Self(code: .alreadyConfirmed, message: "the desktop already confirmed this attempt; waiting for the device")
    /// The device's person rejected the code.
    public static let rejectedByDevice = Self(code: .rejectedByDevice, message: "the device rejected the pairing")
    /// The desktop's person rejected the attempt.
    public static let rejectedByDesktop = Self(code: .rejectedByDesktop, message: "the desktop rejected the pairing")
    /// The device's connection closed during its attempt.
    public static let connectionLost = Self(code: .connectionLost, message: "the device disconnected during pairing; the attempt ended")
    /// The desktop cancelled the window.
    public static let cancelled = Self(code: .cancelled, message: "pairing was cancelled on the desktop")
    /// The five-minute window ran out.
    public static let windowExpired = Self(code: .windowExpired, message: "the pairing window closed after 5 minutes; open a new one to pair")
    /// The fifth failure in one window closed it.
    public static let tooManyFailures = Self(code: .tooManyFailures, message: "the pairing window closed after 5 failed attempts; open a new one to pair")
    /// No random bytes could be drawn for a nonce, credential or device ID.
    public static let randomnessUnavailable = Self(code: .randomnessUnavailable, message: "the server could not draw random bytes; the attempt ended")

    /// A device asked to pair by code while the window is open for pairing by link only.
    public static let linkRequired = Self(code: .linkRequired, message: "this pairing window admits only the device that holds its link (QR code); pairing by code was refused")
    /// A device asked to pair by link while the window is open for pairing by code.
    public static let linkNotOpen = Self(code: .linkNotOpen, message: "no pairing window for a link is open; open one with rivet-pair --open --qr")
    /// The device's proof does not match the window's token and this connection.
    public static let linkProofMismatch = Self(code: .linkProofMismatch, message: "the device's proof does not match this window's link (a wrong or old link, or a proof taken from another connection); the attempt ended")
    /// The desktop typed a code for an attempt by link, which has none.
    public static let noCodeForLink = Self(code: .noCodeForLink, message: "this device pairs by link and has no code; confirm it without --code")

    /// The desktop asked to replace a device that is not paired under the name and application of the device asking; nothing was confirmed and the attempt goes on.
    public static let notANamesake = Self(code: .notANamesake, message: "the device to replace is not paired under the name and application of the device asking; nothing was confirmed")
}
