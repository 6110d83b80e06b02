/* TEST DOUBLE of the DAA decoder interface (not a decoder). */
