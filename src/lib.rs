//! fxt (in progress)
