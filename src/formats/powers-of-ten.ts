/**
 * 10^0 to 10^22: the powers of ten a double holds exactly. A decimal's digits as an integer of at
 * most 15 digits and such a power are both exact, so their quotient is rounded once, to the double
 * nearest the decimal: what Number() reads from its text (see pickMembers and ByteWriter.number).
 */
export const EXACT_POWERS_OF_TEN: readonly number[] = Array.from({ length: 23 }, (_, k) => 10 ** k);
