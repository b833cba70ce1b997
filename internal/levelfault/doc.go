// Package levelfault opens goleveldb databases on a storage whose journal
// writes and syncs fail while a switch is on: a disk that filled up under a
// goleveldb index. goleveldb does its own file IO, outside the file-system
// seams store/pack and store/vaultdb give their tests, so their tests of a
// full disk under the index open it through a Disk instead. Test code only.
package levelfault
