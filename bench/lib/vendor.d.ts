// Types for bench dependencies that ship none: the parts of behaviortree 2.1 the benchmark uses.

declare module 'behaviortree' {
  type RunResult = boolean | symbol;
  /** A node of a tree; trees are built from the constructors below. */
  interface TreeNode {
    readonly name?: string;
  }
  interface TaskBlueprint<B> {
    start?: (blackboard: B) => void;
    end?: (blackboard: B) => void;
    run: (blackboard: B) => RunResult;
  }
  interface BehaviorTreeInstance {
    step(): void;
  }
  const lib: {
    readonly BehaviorTree: new <B>(options: { tree: TreeNode; blackboard: B }) => BehaviorTreeInstance;
    readonly Task: new <B>(blueprint: TaskBlueprint<B>) => TreeNode;
    readonly Sequence: new (blueprint: { nodes: TreeNode[] }) => TreeNode;
    readonly Selector: new (blueprint: { nodes: TreeNode[] }) => TreeNode;
    readonly SUCCESS: true;
    readonly FAILURE: false;
    readonly RUNNING: symbol;
  };
  export default lib;
}
