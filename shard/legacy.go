package shard

// The first key scheme (version 1), kept so day tables written under it stay
// readable until they age out:
//
//	PartitionKey = bucket "_" escaped(user) [ "~" salt ]
//	RowKey       = inverted-ticks "_" escaped(id)
//
// One partition per user made nearly every entity group transaction one or
// two entities long. Nothing writes these keys any more except the tests
// that build version 1 tables the way the old code did.

// LegacyReadKeys lists every version 1 PartitionKey user's attempts can be
// under: the unsalted key first, then one per salt.
func (k *Keyer) LegacyReadKeys(user []byte) []string {
	keys := make([]string, 0, 1+k.cfg.Salts)
	var buf []byte
	for salt := -1; salt < k.cfg.Salts; salt++ {
		buf = k.AppendLegacyKey(buf[:0], user, salt)
		keys = append(keys, string(buf))
	}
	return keys
}

// AppendLegacyKey appends the version 1 PartitionKey of user with the given
// salt (-1: unsalted): bucket (4 hex digits) '_' escaped user ['~' salt].
func (k *Keyer) AppendLegacyKey(dst, user []byte, salt int) []byte {
	dst = appendBucket(dst, k.bucket(hashUser(user), salt))
	dst = append(dst, '_')
	dst = EscapeKey(dst, user)
	if salt >= 0 {
		dst = append(dst, UserSep, byte('0'+salt/10), byte('0'+salt%10))
	}
	return dst
}

// LegacyRowKey appends a version 1 RowKey: inverted ticks '_' escaped id.
func LegacyRowKey(dst []byte, unixNano int64, id []byte) []byte {
	dst = appendPadded(dst, uint64(InvertedTicks(unixNano)), RowKeyTimeWidth)
	dst = append(dst, '_')
	return EscapeKey(dst, id)
}

// ParseLegacyRowKey splits a version 1 RowKey into the time and the id.
func ParseLegacyRowKey(rk []byte) (unixNano int64, id []byte, err error) {
	return parseTimeID(rk)
}
