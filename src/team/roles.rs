//! Which tools each role gets, decided when an agent starts.
