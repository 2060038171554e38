import PoseCore

/// Which person is in which body of an interaction model's frame (`InputSpec.bodies` M > 1),
/// frame by frame, as offline `--people bodies=M` stacks a recording (Datasets' `People`):
///
/// 1. People take bodies in order of first appearance: a person appears at the first frame in
///    which they have a joint present; people who appear in the same frame go in the order
///    they were first pushed (offline: first listed in the file). A model trained on people
///    named by role (`InputSpec.bodyRoles`) puts a person whose id is role k in body k + 1
///    when it is free, whenever they appear; everyone else takes the lowest free body (offline:
///    `BodyOrderRule.roles`; the two agree when every person is a role, or none is).
/// 2. A person keeps their body for the rest of the stream; a body whose person is not in a
///    frame is absent there (every joint missing).
/// 3. With more than M people, a newcomer waits for a body: a body is given up when its person
///    has had no joint present for `forgetAfter` seconds and someone is waiting; the waiting
///    people take the free bodies, lowest first, in the order of rule 1. (Offline, knowing the
///    whole recording, picks the M people present in the most frames instead: the two agree
///    whenever at most M people appear.)
///
/// A frame's pairing is computed by `assign` and kept by `commit` only when the session uses
/// the frame, so that an ignored frame changes nothing.
struct BodyPairing {
    let bodies: Int
    let forgetAfter: Double
    /// The person ids of bodies 1, 2, ... (the model's `bodyRoles`); empty: none.
    let roles: [PersonID]
    /// The person in each body (nil: free), and when they last had a joint present.
    private(set) var occupants: [(id: PersonID, lastSeen: Double)?]
    /// People pushed who have no body yet: the order of their first push, and its last time
    /// (those not pushed for `forgetAfter` seconds are dropped).
    private var waiting: [PersonID: (order: Int, lastPushed: Double)] = [:]
    private var pushes = 0

    init(bodies: Int, forgetAfter: Double, roles: [PersonID] = []) {
        self.bodies = bodies
        self.forgetAfter = forgetAfter
        self.roles = roles
        occupants = Array(repeating: nil, count: bodies)
    }

    /// The bodies of a frame at `time` of `people` (in pushed order; `seen`: a joint present),
    /// one per person (nil: the person has no body, and waits when seen). Returns the new state
    /// with it, for `commit`.
    func assign(_ people: [(id: PersonID, seen: Bool)], time: Double) -> (bodies: [Int?], next: BodyPairing) {
        var next = self
        var result = [Int?](repeating: nil, count: people.count)
        var newcomers: [(order: Int, index: Int)] = []
        for (k, p) in people.enumerated() {
            if let b = next.occupants.firstIndex(where: { $0?.id == p.id }) {
                result[k] = b
                if p.seen { next.occupants[b]!.lastSeen = time }
                continue
            }
            let order = next.waiting[p.id]?.order ?? next.pushes
            if next.waiting[p.id] == nil { next.pushes += 1 }
            next.waiting[p.id] = (order, time)
            if p.seen { newcomers.append((order, k)) }
        }
        newcomers.sort { $0.order < $1.order }
        for n in newcomers {
            let id = people[n.index].id
            var free = next.occupants.firstIndex { $0 == nil }
            if let role = roles.firstIndex(of: id), role < bodies, next.occupants[role] == nil { free = role }
            if free == nil, let stale = next.occupants.indices.filter({ next.occupants[$0]!.lastSeen < time - forgetAfter }).first {
                next.occupants[stale] = nil
                free = stale
            }
            guard let b = free else { continue }
            next.occupants[b] = (id, time)
            next.waiting[id] = nil
            result[n.index] = b
        }
        if next.waiting.count > 2 * bodies + 16 { next.waiting = next.waiting.filter { $0.value.lastPushed >= time - forgetAfter } }
        return (result, next)
    }

    /// Forgets everyone: the next frame starts a new stream.
    mutating func reset() { self = BodyPairing(bodies: bodies, forgetAfter: forgetAfter, roles: roles) }

    /// The people in the bodies, in body order (nil: a free body).
    var people: [PersonID?] { occupants.map { $0?.id } }
}
