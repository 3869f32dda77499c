import CommandLineKit
import Foundation

/// Asks `question` on standard error when standard input is a terminal, then reads one line of
/// standard input: true for `y` or `yes` (any case, blanks around it ignored), false for
/// anything else, or for no line at all.
func answeredYes(to question: String) -> Bool {
    if isatty(STDIN_FILENO) == 1 { try? OutputChannel.standardError.write(question + " [y/N] ") }
    let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
    return answer == "y" || answer == "yes"
}
