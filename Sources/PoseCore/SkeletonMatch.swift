extension Skeleton {
    /// Why poses on the skeleton `data` cannot be fed to a model on this skeleton, or nil when
    /// they can (the same joint names in the same order, the same dimensions): the first
    /// difference, by joint index. Skeletons with the same name and size can still differ (the
    /// joints reordered or renamed), so the message names the joint, not the skeletons alone.
    public func mismatch(data: Skeleton) -> String? {
        func describe(_ s: Skeleton) -> String { "'\(s.name)' (\(s.jointCount) joints, \(s.dimensions)D)" }
        if data.dimensions != dimensions {
            return "the data's skeleton \(describe(data)) is \(data.dimensions)D but the model's \(describe(self)) is \(dimensions)D"
        }
        let common = min(data.jointCount, jointCount)
        if let j = (0..<common).first(where: { data.joints[$0] != joints[$0] }) {
            var text = "joint \(j) is '\(data.joints[j])' in the data's skeleton \(describe(data)) but '\(joints[j])' in the model's \(describe(self))"
            // The order hint only for the model's own joints in another order (not another
            // skeleton that shares a joint name).
            if Set(data.joints) == Set(joints), let k = joints.firstIndex(of: data.joints[j]) {
                text += "; the model has '\(data.joints[j])' at index \(k): put the data's joints in the model's order"
            }
            return text
        }
        if data.jointCount != jointCount {
            let extra =
                data.jointCount < jointCount
                ? "the model's joint \(common) '\(joints[common])' is not in the data"
                : "the data's joint \(common) '\(data.joints[common])' is not in the model"
            return "the data's skeleton \(describe(data)) has \(data.jointCount) joints, the model's \(describe(self)) has \(jointCount): \(extra)"
        }
        return nil
    }
}
