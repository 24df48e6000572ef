//! The remote-wipe flag of a device and its state machine.
//!
//! 0 not set → 1 set (an administrator, or a user delete with `remoteWipe`) → 2 notified (the
//! device reads its flag) → 3 completed (the device reports the wipe done; the interface allows
//! this from 0, 1 and 2).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WipeFlag {
    NotSet = 0,
    Set = 1,
    Notified = 2,
    Completed = 3,
}

impl WipeFlag {
    pub fn from_i32(v: i32) -> Option<WipeFlag> {
        Some(match v {
            0 => WipeFlag::NotSet,
            1 => WipeFlag::Set,
            2 => WipeFlag::Notified,
            3 => WipeFlag::Completed,
            _ => return None,
        })
    }

    pub const fn as_i32(self) -> i32 {
        self as i32
    }

    /// An administrator requests a wipe. A completed wipe is not requested again.
    pub fn request(self) -> WipeFlag {
        match self {
            WipeFlag::NotSet => WipeFlag::Set,
            other => other,
        }
    }

    /// The device reads its flag: a pending request becomes "notified".
    pub fn on_read(self) -> WipeFlag {
        match self {
            WipeFlag::Set => WipeFlag::Notified,
            other => other,
        }
    }

    /// The device reports that it completed the wipe.
    pub fn complete(self) -> WipeFlag {
        WipeFlag::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::WipeFlag::*;
    use super::*;

    #[test]
    fn the_machine() {
        assert_eq!(NotSet.request(), Set);
        assert_eq!(Set.request(), Set);
        assert_eq!(Completed.request(), Completed);
        assert_eq!(NotSet.on_read(), NotSet);
        assert_eq!(Set.on_read(), Notified);
        assert_eq!(Notified.on_read(), Notified);
        for s in [NotSet, Set, Notified, Completed] {
            assert_eq!(s.complete(), Completed);
            assert_eq!(WipeFlag::from_i32(s.as_i32()), Some(s));
        }
        assert_eq!(WipeFlag::from_i32(4), None);
    }
}
